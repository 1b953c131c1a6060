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
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// hook is one bracketed kernel function: its fentry and fexit programs.
type hook struct {
	fn          string
	enter, exit string
	required    bool
}

var hooks = []hook{
	{hookSkb, nscpuProgRxSkbEnter, nscpuProgRxSkbExit, true},
	{hookList, nscpuProgRxListEnter, nscpuProgRxListExit, false},
	{hookPoll, nscpuProgVethPollEnter, nscpuProgVethPollExit, false},
	{hookNetRx, nscpuProgNetRxEnter, nscpuProgNetRxExit, false},
}

// Accountant is the loaded and attached programs and their maps. Its
// methods may be called from several goroutines.
type Accountant struct {
	mu       sync.Mutex
	state    *ebpf.Map
	usage    *ebpf.Map
	progs    []*ebpf.Program
	links    []link.Link
	attached []string
	missing  map[string]error
	closed   bool
}

// Start loads the programs and attaches them: from then on the receive
// processing of every network namespace is counted. __netif_receive_skb is
// required; the other functions are attached when the kernel has them
// (Missing says which are not). On error nothing is left behind.
func Start() (*Accountant, error) {
	a, err := load()
	if err != nil {
		return nil, err
	}
	if err := a.attach(); err != nil {
		return nil, errors.Join(err, a.Close())
	}
	return a, nil
}

// load creates the maps and loads every program whose kernel function
// exists; nothing is attached.
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
	a := &Accountant{missing: map[string]error{}}
	if a.state, err = ebpf.NewMap(spec.Maps[nscpuMapState]); err == nil {
		a.usage, err = ebpf.NewMap(spec.Maps[nscpuMapNetnsUsage])
	}
	if err != nil {
		return nil, errors.Join(notSupported(fmt.Errorf("create nscpu maps: %w", err)), a.Close())
	}
	for _, h := range hooks {
		// Each hook is its own collection so that a kernel without one of
		// the optional functions still runs the others.
		sub := spec.Copy()
		for name := range sub.Programs {
			if name != h.enter && name != h.exit {
				delete(sub.Programs, name)
			}
		}
		coll, err := ebpf.NewCollectionWithOptions(sub, ebpf.CollectionOptions{
			MapReplacements: map[string]*ebpf.Map{nscpuMapState: a.state, nscpuMapNetnsUsage: a.usage},
		})
		if err != nil {
			if !h.required && errors.Is(err, btf.ErrNotFound) {
				a.missing[h.fn] = err
				continue
			}
			return nil, errors.Join(notSupported(fmt.Errorf("load nscpu programs for %s: %w", h.fn, err)), a.Close())
		}
		// The exit program first: Start attaches in this order (see attach).
		exit, enter := coll.DetachProgram(h.exit), coll.DetachProgram(h.enter)
		coll.Close()
		a.progs = append(a.progs, exit, enter)
		a.attached = append(a.attached, h.fn)
	}
	return a, nil
}

// notSupported wraps err in ErrNotSupported if it means that the kernel or
// the caller's privileges cannot run the programs.
func notSupported(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return err // a bug in nscpu.c, not a missing feature
	}
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, btf.ErrNotFound) ||
		errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) ||
		errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return err
}

// attach attaches every fexit program before any fentry program: a call in
// flight whose entry was not seen is then ignored at its exit, whereas an
// entry seen without its exit would leave a frame open until a later exit
// on the CPU found it stale.
func (a *Accountant) attach() error {
	for _, pass := range []int{0, 1} { // progs alternate exit, enter
		for i := pass; i < len(a.progs); i += 2 {
			l, err := link.AttachTracing(link.TracingOptions{Program: a.progs[i]})
			if err != nil {
				return notSupported(fmt.Errorf("attach %v: %w", a.progs[i], err))
			}
			a.links = append(a.links, l)
		}
	}
	return nil
}

// Attached returns the kernel functions bracketed.
func (a *Accountant) Attached() []string { return append([]string(nil), a.attached...) }

// Missing returns the optional kernel functions that this kernel lacks
// (the reason for each), which Start left out.
func (a *Accountant) Missing() map[string]error {
	m := make(map[string]error, len(a.missing))
	for k, v := range a.missing {
		m[k] = v
	}
	return m
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
	it := a.usage.Iterate()
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
	if err := a.state.Lookup(uint32(0), &per); err != nil {
		return Totals{}, fmt.Errorf("nscpu: read counters: %w", err)
	}
	var t Totals
	for _, s := range per {
		t.NetRxNs += s.RxNs
		t.NetRxRuns += s.RxRuns
		t.NetRxInsideNs += s.RxInsideNs
		t.SkbCalls += s.Calls[0]
		t.ListCalls += s.Calls[1]
		t.PollCalls += s.Calls[2]
		t.Unmatched += s.Unmatched
		t.TooDeep += s.TooDeep
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
	// Entries first (the reverse of attach), then exits.
	for i := len(a.links) - 1; i >= 0; i-- {
		if err := a.links[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	a.links = nil
	for _, p := range a.progs {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	a.progs = nil
	for _, m := range []*ebpf.Map{a.state, a.usage} {
		if m != nil {
			if err := m.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nscpu: close: %w", err)
	}
	return nil
}

// Probe reports whether this machine can run the accountant: kernel BTF,
// fentry/fexit programs, __netif_receive_skb, and loading the programs
// (not attaching them). It returns nil or an error wrapping ErrNotSupported
// that says why.
func Probe() error {
	if err := features.HaveProgramType(ebpf.Tracing); err != nil {
		return fmt.Errorf("%w: fentry/fexit programs: %w", ErrNotSupported, err)
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("%w: kernel BTF: %w", ErrNotSupported, err)
	}
	var fn *btf.Func
	if err := spec.TypeByName(hookSkb, &fn); err != nil {
		return fmt.Errorf("%w: kernel function %s in BTF: %w", ErrNotSupported, hookSkb, err)
	}
	a, err := load()
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return a.Close()
}
