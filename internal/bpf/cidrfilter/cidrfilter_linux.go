//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The build constraint matches the generated egress_bpfel.go (only the
// little-endian object is committed); cidrfilter_other.go covers the rest.

package cidrfilter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/cnibench/cnibench/internal/bpf/mapval"
	"github.com/cnibench/cnibench/internal/nsrun"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
)

// Indexes of the `counters` map; keep in sync with enum counter_idx in
// egress.c.
const (
	cntDropped = iota
	cntPassed
	cntNotIPv4
	cntMax
)

// Filter is a loaded egress filter: the program, its maps and, while
// attached, its TCX link. Its methods are for one goroutine at a time.
type Filter struct {
	kind     Kind
	prog     *ebpf.Program
	deny     *ebpf.Map // lpm or hash
	lens     *ebpf.Map // hash_lens (KindHash only)
	counters *ebpf.Map
	lengths  lengthSet
	rules    int

	tcx link.Link
	do  func(func() error) error
	dev string
	at  ebpf.AttachType
}

// lpmObjects and hashObjects select what LoadAndAssign loads for a kind
// (the program and the maps it uses, nothing else from the object).
type lpmObjects struct {
	Prog     *ebpf.Program `ebpf:"egress_lpm"`
	Deny     *ebpf.Map     `ebpf:"lpm"`
	Counters *ebpf.Map     `ebpf:"counters"`
}

type hashObjects struct {
	Prog     *ebpf.Program `ebpf:"egress_hash"`
	Deny     *ebpf.Map     `ebpf:"hash"`
	Lens     *ebpf.Map     `ebpf:"hash_lens"`
	Counters *ebpf.Map     `ebpf:"counters"`
}

// Probe reports whether this machine can run the filter of kind k: the tc
// program type, the map type, loading, and a TCX attach on the loopback of
// a scratch network namespace. It returns nil or an error wrapping
// ErrNotSupported that says why.
// ProbeLoad is Probe without the attach test in a scratch namespace
// (which needs CAP_SYS_ADMIN): what a pod with only NET_ADMIN and BPF can
// check before it attaches to its own interface.
func ProbeLoad(k Kind) error {
	if err := features.HaveProgramType(ebpf.SchedCLS); err != nil {
		return fmt.Errorf("%w: tc (sched_cls) BPF programs: %w", ErrNotSupported, err)
	}
	mt := ebpf.LPMTrie
	if k == KindHash {
		mt = ebpf.Hash
	}
	if err := features.HaveMapType(mt); err != nil {
		return fmt.Errorf("%w: BPF map type %s: %w", ErrNotSupported, mt, err)
	}
	f, err := probeLoad(k)
	if err != nil {
		return err
	}
	return f.Close()
}

// probeLoad loads a one-CIDR filter.
func probeLoad(k Kind) (*Filter, error) {
	f, _, err := Load(context.Background(), k, []netip.Prefix{netip.MustParsePrefix("240.0.0.0/24")}, 0)
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return f, nil
}

func Probe(k Kind) error {
	if err := ProbeLoad(k); err != nil {
		return err
	}
	f, err := probeLoad(k)
	if err != nil {
		return err
	}
	defer f.Close()
	err = nsrun.Scratch(func() error {
		if err := f.AttachIngress(nil, "lo"); err != nil {
			return err
		}
		return f.Detach()
	})
	if err != nil && !errors.Is(err, ErrNotSupported) {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return err
}

// Load creates the program and maps of kind k for cidrs (IPv4, no
// duplicates: a duplicate fails the load) and fills the deny map with BPF_MAP_UPDATE_BATCH calls of
// batch elements (DefaultBatch if batch <= 0). The program is not attached
// yet (AttachIngress). On error nothing is left behind.
func Load(ctx context.Context, k Kind, cidrs []netip.Prefix, batch int) (*Filter, LoadStats, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	keys, err := keysOf(cidrs)
	if err != nil {
		return nil, LoadStats{}, err
	}
	n, err := maxEntries(len(keys))
	if err != nil {
		return nil, LoadStats{}, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, LoadStats{}, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadEgress()
	if err != nil {
		return nil, LoadStats{}, fmt.Errorf("parse egress BPF object: %w", err)
	}
	f := &Filter{kind: k}
	switch k {
	case KindLPM:
		spec.Maps["lpm"].MaxEntries = n
		var o lpmObjects
		if err := spec.LoadAndAssign(&o, nil); err != nil {
			return nil, LoadStats{}, loadErr(k, err)
		}
		f.prog, f.deny, f.counters = o.Prog, o.Deny, o.Counters
	case KindHash:
		spec.Maps["hash"].MaxEntries = n
		var o hashObjects
		if err := spec.LoadAndAssign(&o, nil); err != nil {
			return nil, LoadStats{}, loadErr(k, err)
		}
		f.prog, f.deny, f.lens, f.counters = o.Prog, o.Deny, o.Lens, o.Counters
	default:
		return nil, LoadStats{}, fmt.Errorf("unknown egress filter kind %v", k)
	}
	st, err := f.fill(ctx, keys, batch)
	st.MaxEntries = n
	if err != nil {
		f.Close()
		return nil, st, err
	}
	return f, st, nil
}

func loadErr(k Kind, err error) error {
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w: load egress %v program: %w", ErrNotSupported, k, err)
	}
	return fmt.Errorf("load egress %v program: %w", k, err)
}

// fill batch-updates the deny map with keys and, for KindHash, publishes
// the present prefix lengths afterwards.
func (f *Filter) fill(ctx context.Context, keys []prefixKey, batch int) (LoadStats, error) {
	st := LoadStats{BatchSize: batch}
	vals := make([]uint8, min(batch, len(keys)))
	for i := range vals {
		vals[i] = 1
	}
	for i := 0; i < len(keys); i += batch {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("fill egress %v map: %w", f.kind, err)
		}
		j := min(i+batch, len(keys))
		n, err := f.deny.BatchUpdate(keys[i:j], vals[:j-i], nil)
		st.Batches++
		if err != nil {
			if errors.Is(err, ebpf.ErrNotSupported) {
				err = fmt.Errorf("%w: %w", ErrNotSupported, err)
			}
			return st, fmt.Errorf("fill egress %v map: batch update %d..%d: %d done: %w", f.kind, i, j, n, err)
		}
		if n != j-i {
			return st, fmt.Errorf("fill egress %v map: batch update %d..%d: kernel took %d of %d", f.kind, i, j, n, j-i)
		}
	}
	f.rules = len(keys)
	if f.kind == KindHash {
		for _, k := range keys {
			f.lengths.add(k.PrefixLen)
		}
		if err := f.publishLengths(); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (f *Filter) publishLengths() error {
	v := f.lengths.value()
	if err := f.lens.Update(uint32(0), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("update egress prefix lengths: %w", err)
	}
	return nil
}

// AttachIngress attaches the program at TCX ingress of dev (a pod's
// node-side veth). do runs its function inside dev's network namespace
// (nil: the caller's thread's namespace).
func (f *Filter) AttachIngress(do func(func() error) error, dev string) error {
	return f.attach(do, dev, ebpf.AttachTCXIngress)
}

// AttachEgress attaches the program at TCX egress of dev (a pod filtering
// its own egress on its interface); see AttachIngress.
func (f *Filter) AttachEgress(do func(func() error) error, dev string) error {
	return f.attach(do, dev, ebpf.AttachTCXEgress)
}

func (f *Filter) attach(do func(func() error) error, dev string, at ebpf.AttachType) error {
	if f.prog == nil {
		return errors.New("attach egress filter: closed")
	}
	if f.tcx != nil {
		return fmt.Errorf("attach egress filter to %s: already attached", dev)
	}
	if do == nil {
		do = func(g func() error) error { return g() }
	}
	var l link.Link
	err := do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return fmt.Errorf("find interface %s: %w", dev, err)
		}
		l, err = link.AttachTCX(link.TCXOptions{Interface: ifi.Index, Program: f.prog, Attach: at})
		if err != nil {
			if errors.Is(err, ebpf.ErrNotSupported) {
				err = fmt.Errorf("%w: TCX: %w", ErrNotSupported, err)
			}
			return fmt.Errorf("attach TCX %v on %s (ifindex %d): %w", at, dev, ifi.Index, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("attach egress %v filter: %w", f.kind, err)
	}
	f.tcx, f.do, f.dev, f.at = l, do, dev, at
	return nil
}

// Detach removes the TCX link; the maps and their contents stay.
func (f *Filter) Detach() error {
	if f.tcx == nil {
		return nil
	}
	err := bpflink.Close(f.tcx)
	f.tcx = nil
	if err != nil {
		return fmt.Errorf("detach egress filter from %s: %w", f.dev, err)
	}
	return nil
}

// Reattach attaches again where the last AttachIngress did.
func (f *Filter) Reattach() error {
	if f.dev == "" {
		return errors.New("reattach egress filter: never attached")
	}
	return f.attach(f.do, f.dev, f.at)
}

// Add inserts one CIDR (one map update; for KindHash also the prefix-length
// list when its length is new). Adding a CIDR already in the set does
// nothing.
func (f *Filter) Add(p netip.Prefix) error {
	k, err := keyOf(p)
	if err != nil {
		return err
	}
	if err := f.deny.Update(&k, uint8(1), ebpf.UpdateNoExist); err != nil {
		if errors.Is(err, ebpf.ErrKeyExist) {
			return nil
		}
		return fmt.Errorf("add %v to egress %v map: %w", p, f.kind, err)
	}
	f.rules++
	if f.kind == KindHash && f.lengths.add(k.PrefixLen) {
		return f.publishLengths()
	}
	return nil
}

// Remove deletes one CIDR; it fails if the CIDR is not in the set.
func (f *Filter) Remove(p netip.Prefix) error {
	k, err := keyOf(p)
	if err != nil {
		return err
	}
	if err := f.deny.Delete(&k); err != nil {
		return fmt.Errorf("remove %v from egress %v map: %w", p, f.kind, err)
	}
	f.rules--
	if f.kind == KindHash && f.lengths.remove(k.PrefixLen) {
		return f.publishLengths()
	}
	return nil
}

// Rules is the number of CIDRs in the set.
func (f *Filter) Rules() int { return f.rules }

// Counters reads the per-CPU counters, summed.
func (f *Filter) Counters() (Counters, error) {
	c, err := mapval.SumPerCPU(f.counters, cntMax)
	if err != nil {
		return Counters{}, fmt.Errorf("egress: %w", err)
	}
	return Counters{Dropped: c[cntDropped], Passed: c[cntPassed], NotIPv4: c[cntNotIPv4]}, nil
}

// KernelBytes is the memory of the filter's maps as the kernel reports it
// (the "memlock" of each map's fdinfo, summed).
func (f *Filter) KernelBytes() (int64, error) {
	var total int64
	for _, m := range []*ebpf.Map{f.deny, f.lens, f.counters} {
		if m == nil {
			continue
		}
		info, err := m.Info()
		if err != nil {
			return 0, fmt.Errorf("read egress map info: %w", err)
		}
		b, ok := info.Memlock()
		if !ok {
			return 0, fmt.Errorf("egress map %s: kernel reports no memlock", info.Name)
		}
		total += int64(b)
	}
	return total, nil
}

// IDs returns the kernel IDs of the program, the maps and the TCX link (0
// when detached), for checks that Close leaves nothing behind.
func (f *Filter) IDs() (prog ebpf.ProgramID, maps []ebpf.MapID, tcx link.ID, err error) {
	if f.prog == nil {
		return 0, nil, 0, errors.New("egress filter closed")
	}
	pi, err := f.prog.Info()
	if err != nil {
		return 0, nil, 0, fmt.Errorf("egress program info: %w", err)
	}
	prog, _ = pi.ID()
	for _, m := range []*ebpf.Map{f.deny, f.lens, f.counters} {
		if m == nil {
			continue
		}
		mi, err := m.Info()
		if err != nil {
			return 0, nil, 0, fmt.Errorf("egress map info: %w", err)
		}
		id, _ := mi.ID()
		maps = append(maps, id)
	}
	if f.tcx != nil {
		li, err := f.tcx.Info()
		if err != nil {
			return 0, nil, 0, fmt.Errorf("egress link info: %w", err)
		}
		tcx = li.ID
	}
	return prog, maps, tcx, nil
}

// Close detaches the program and frees the program and maps. It may be
// called more than once.
func (f *Filter) Close() error {
	errs := []error{f.Detach()}
	for _, c := range []interface{ Close() error }{f.prog, f.deny, f.lens, f.counters} {
		switch v := c.(type) {
		case *ebpf.Program:
			if v != nil {
				errs = append(errs, v.Close())
			}
		case *ebpf.Map:
			if v != nil {
				errs = append(errs, v.Close())
			}
		}
	}
	f.prog, f.deny, f.lens, f.counters = nil, nil, nil, nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close egress filter: %w", err)
	}
	return nil
}
