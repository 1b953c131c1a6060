//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The build constraint matches the generated nscpu_bpfel.go (only the
// little-endian object is committed); nscpu_other.go covers the rest.

package nscpu

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Indexes of cpu_state.events (enum event_idx in nscpu.c).
const (
	evReceive = iota
	evGRO
	evPoll
	evExit
)

// Accountant is the loaded and attached programs and their maps. Its
// methods may be called from several goroutines.
type Accountant struct {
	mu     sync.Mutex
	objs   nscpuObjects
	links  []link.Link
	closed bool
}

// Start loads the programs and attaches them: from then on the receive
// processing of every network namespace is counted. On error nothing is
// left behind.
func Start() (*Accountant, error) {
	a, err := load()
	if err != nil {
		return nil, err
	}
	// Any order works: each program only closes the segment open on its
	// CPU and opens a new one, so a segment that began before Start is
	// simply not seen.
	for _, p := range a.programs() {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return nil, errors.Join(notSupported(fmt.Errorf("attach %v: %w", p, err)), a.Close())
		}
		a.links = append(a.links, l)
	}
	return a, nil
}

func (a *Accountant) programs() []*ebpf.Program {
	p := &a.objs.nscpuPrograms
	return []*ebpf.Program{p.OnSoftirqEntry, p.OnSoftirqExit, p.OnPoll, p.OnReceiveExit, p.OnListExit, p.OnGro, p.OnReceive}
}

// load creates the maps and loads the programs; nothing is attached.
func load() (*Accountant, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadNscpu()
	if err != nil {
		return nil, fmt.Errorf("parse nscpu BPF object: %w", err)
	}
	if n := spec.Maps[nscpuMapNetnsUsage].MaxEntries; n != MaxNamespaces {
		return nil, fmt.Errorf("nscpu BPF object: netns_usage holds %d entries, MaxNamespaces is %d", n, MaxNamespaces)
	}
	a := &Accountant{}
	if err := spec.LoadAndAssign(&a.objs, nil); err != nil {
		return nil, notSupported(fmt.Errorf("load nscpu programs: %w", err))
	}
	return a, nil
}

// notSupported wraps err in ErrNotSupported if it means that the kernel or
// the caller's privileges cannot run the programs (a verifier rejection is
// a bug in nscpu.c and is not wrapped).
func notSupported(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return err
	}
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, btf.ErrNotFound) || errors.Is(err, btf.ErrNotSupported) ||
		errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) ||
		errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return err
}

// Read returns the usage of every namespace charged since Start, keyed by
// namespace inode, summed over CPUs. Inode 0 collects receives whose
// device's namespace could not be read. Namespace inodes are reused once a
// namespace is gone: compare readings of namespaces that live throughout.
func (a *Accountant) Read() (map[uint64]Usage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errors.New("nscpu: read after Close")
	}
	out := map[uint64]Usage{}
	var key uint32
	var per []nscpuUsage
	it := a.objs.NetnsUsage.Iterate()
	for it.Next(&key, &per) {
		var u Usage
		for _, v := range per {
			u = u.Add(Usage{SoftirqNs: v.Ns, Packets: v.Packets})
		}
		out[uint64(key)] = u
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("nscpu: read usage: %w", err)
	}
	return out, nil
}

// Totals returns the machine-wide counters.
func (a *Accountant) Totals() (Totals, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Totals{}, errors.New("nscpu: read after Close")
	}
	var per []nscpuCpuState
	if err := a.objs.State.Lookup(uint32(0), &per); err != nil {
		return Totals{}, fmt.Errorf("nscpu: read counters: %w", err)
	}
	var t Totals
	for _, s := range per {
		t.NetRxNs += s.RxNs
		t.NetRxRuns += s.RxRuns
		t.NetRxInsideNs += s.RxInsideNs
		t.Receives += s.Events[evReceive]
		t.GROs += s.Events[evGRO]
		t.Polls += s.Events[evPoll]
		t.Exits += s.Events[evExit]
		t.Segments += s.Segments
		t.Stale += s.Stale
		t.MapFull += s.MapFull
	}
	return t, nil
}

// Close detaches the programs and frees everything; it may be called more
// than once.
func (a *Accountant) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var errs []error
	for _, l := range a.links {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	a.links = nil
	if err := a.objs.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nscpu: close: %w", err)
	}
	return nil
}

// Probe reports whether this machine can run the accountant: kernel BTF,
// BTF tracepoint programs, the tracepoints, and loading the programs (not
// attaching them). It returns nil or an error wrapping ErrNotSupported
// that says why.
func Probe() error {
	if _, err := btf.LoadKernelSpec(); err != nil {
		return fmt.Errorf("%w: kernel BTF: %w", ErrNotSupported, err)
	}
	// Not features.HaveProgramType(ebpf.Tracing): it probes with an fentry
	// program, which some kernels refuse (EPERM) while they run tp_btf
	// programs. Loading decides.
	a, err := load()
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return a.Close()
}
