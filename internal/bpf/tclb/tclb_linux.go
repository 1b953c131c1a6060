//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The build constraint matches the generated tclb_bpfel.go (only the
// little-endian object is committed); tclb_other.go covers the rest.

package tclb

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/mapval"
	"github.com/cnibench/cnibench/internal/nsrun"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
)

// LB is the loaded programs and maps; while attached, their TCX links on
// every device. Its methods are for one goroutine at a time.
type LB struct {
	objs     tclbObjects
	attached []attachment
	closed   bool
}

// attachment is one device's TCX links.
type attachment struct {
	dev   string
	links []link.Link
}

// Load creates the maps for services with Maglev tables of size m (0:
// DefaultMaglevSize) and loads both programs. Nothing is attached yet.
func Load(services []Service, m int) (*LB, error) {
	if m == 0 {
		m = DefaultMaglevSize
	}
	l, err := entries(services, m)
	if err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadTclb()
	if err != nil {
		return nil, fmt.Errorf("parse tclb BPF object: %w", err)
	}
	if err := spec.Variables["maglev_m"].Set(uint32(m)); err != nil {
		return nil, fmt.Errorf("set maglev_m: %w", err)
	}
	if err := spec.Variables["hairpin_addr"].Set(mapval.Addr4(HairpinAddr)); err != nil {
		return nil, fmt.Errorf("set hairpin_addr: %w", err)
	}
	spec.Maps["services"].MaxEntries = uint32(max(len(l.keys), 1))
	spec.Maps["maglev"].MaxEntries = uint32(max(len(l.table), 1))
	spec.Maps["backends"].MaxEntries = uint32(max(len(l.backends), 1))
	lb := &LB{}
	if err := spec.LoadAndAssign(&lb.objs, nil); err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: load tclb programs: %w", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("load tclb programs: %w", err)
	}
	fill := func(what string, m *ebpf.Map, keys, vals any, n int) error {
		if n == 0 {
			return nil
		}
		if _, err := m.BatchUpdate(keys, vals, nil); err != nil {
			return fmt.Errorf("fill %s: %w", what, err)
		}
		return nil
	}
	idx := func(n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(i)
		}
		return out
	}
	if err := errors.Join(
		fill("backends", lb.objs.Backends, idx(len(l.backends)), l.backends, len(l.backends)),
		fill("maglev", lb.objs.Maglev, idx(len(l.table)), l.table, len(l.table)),
		fill("services", lb.objs.Services, l.keys, l.vals, len(l.keys)),
	); err != nil {
		return nil, errors.Join(err, lb.Close())
	}
	return lb, nil
}

// Attach attaches lb_ingress at TCX ingress and lb_egress at TCX egress of
// dev (a pod's node-side veth). do runs its function inside dev's network
// namespace (nil: the caller's thread's). It may be called for several
// devices, in the same or other namespaces: they all share the maps, so a
// flow DNATed on one device is reverse-NATed wherever its replies leave.
// A failed call leaves the earlier attachments as they were.
func (lb *LB) Attach(do func(func() error) error, dev string) error {
	if lb.closed {
		return fmt.Errorf("attach tclb to %s: load balancer closed", dev)
	}
	if do == nil {
		do = func(f func() error) error { return f() }
	}
	var links []link.Link
	err := do(func() (err error) {
		links, err = lb.attachHere(dev)
		return err
	})
	if err != nil {
		// do can fail after its function succeeded (leaving the
		// namespace), so links may need closing here.
		return errors.Join(fmt.Errorf("attach tclb to %s: %w", dev, err), bpflink.CloseAll(links))
	}
	lb.attached = append(lb.attached, attachment{dev: dev, links: links})
	return nil
}

// attachHere attaches both programs to dev in the calling thread's
// network namespace; on failure it closes what it attached.
func (lb *LB) attachHere(dev string) ([]link.Link, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return nil, fmt.Errorf("find interface: %w", err)
	}
	var links []link.Link
	for _, p := range []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{{lb.objs.LbIngress, ebpf.AttachTCXIngress}, {lb.objs.LbEgress, ebpf.AttachTCXEgress}} {
		l, err := link.AttachTCX(link.TCXOptions{Interface: ifi.Index, Program: p.prog, Attach: p.attach})
		if err != nil {
			if errors.Is(err, ebpf.ErrNotSupported) {
				err = fmt.Errorf("%w: TCX: %w", ErrNotSupported, err)
			}
			return nil, errors.Join(fmt.Errorf("%v: %w", p.attach, err), bpflink.CloseAll(links))
		}
		links = append(links, l)
	}
	return links, nil
}

// Detach removes the TCX links from every device; the maps stay.
func (lb *LB) Detach() error {
	var errs []error
	for _, a := range lb.attached {
		if err := bpflink.CloseAll(a.links); err != nil {
			errs = append(errs, fmt.Errorf("detach tclb from %s: %w", a.dev, err))
		}
	}
	lb.attached = nil
	return errors.Join(errs...)
}

// Counters sums the per-CPU counters.
func (lb *LB) Counters() (Counters, error) {
	c, err := mapval.SumPerCPU(lb.objs.Counters, cntMax)
	if err != nil {
		return Counters{}, fmt.Errorf("tclb: %w", err)
	}
	return countersFrom(c), nil
}

// Flush empties the connection maps (ct_fwd, ct_rev), as flushing the
// kernel's conntrack table does for DNAT: the next packet of every flow is
// a new flow again. It returns how many entries it removed.
func (lb *LB) Flush() (int, error) {
	n := 0
	for _, m := range []*ebpf.Map{lb.objs.CtFwd, lb.objs.CtRev} {
		var keys []tclbFlow
		var k tclbFlow
		var v tclbNat
		it := m.Iterate()
		for it.Next(&k, &v) {
			keys = append(keys, k)
		}
		if err := it.Err(); err != nil {
			return n, fmt.Errorf("tclb: list connections: %w", err)
		}
		for _, key := range keys {
			if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return n, fmt.Errorf("tclb: delete a connection: %w", err)
			}
			n++
		}
	}
	return n, nil
}

// Close detaches and frees everything; it may be called more than once.
func (lb *LB) Close() error {
	if lb.closed {
		return nil
	}
	lb.closed = true
	return errors.Join(lb.Detach(), lb.objs.Close())
}

// Probe reports whether this machine can run the TC load balancer: tc
// programs, LRU hash maps, loading, and a TCX attach in both directions on
// the loopback of a scratch network namespace. It returns nil or an error
// wrapping ErrNotSupported that says why.
func Probe() error {
	if err := features.HaveProgramType(ebpf.SchedCLS); err != nil {
		return fmt.Errorf("%w: tc (sched_cls) BPF programs: %w", ErrNotSupported, err)
	}
	if err := features.HaveMapType(ebpf.LRUHash); err != nil {
		return fmt.Errorf("%w: BPF map type %s: %w", ErrNotSupported, ebpf.LRUHash, err)
	}
	lb, err := Load(nil, 0)
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	defer lb.Close()
	err = nsrun.Scratch(func() error { return errors.Join(lb.Attach(nil, "lo"), lb.Detach()) })
	if err != nil && !errors.Is(err, ErrNotSupported) {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return err
}
