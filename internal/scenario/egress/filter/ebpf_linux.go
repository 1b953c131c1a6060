package filter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal/bpf/cidrfilter"
)

// ebpfMaxRules is the largest N the BPF mechanisms run with. No kernel
// bound was found below it (max_entries is a u32). Measured at 1M: the LPM
// trie's memlock was 27.7 MiB (allocated per element) and the preallocated
// hash's 78 MiB (about 80 bytes per max_entries slot), so 10M needs
// roughly 0.3 and 0.8 GiB of kernel memory (internal/bpf/cidrfilter/README.md).
const ebpfMaxRules = 10_000_000

func init() {
	Register("ebpf-lpm", func() Mechanism { return &ebpfMechanism{name: "ebpf-lpm", kind: cidrfilter.KindLPM} })
	Register("ebpf-hash", func() Mechanism { return &ebpfMechanism{name: "ebpf-hash", kind: cidrfilter.KindHash} })
}

// ebpfMechanism filters at TCX ingress of the pod's node-side veth with
// the program of internal/bpf/cidrfilter: an LPM trie (ebpf-lpm) or a hash map
// probed once per prefix length present (ebpf-hash).
type ebpfMechanism struct {
	name string
	kind cidrfilter.Kind
}

func (m *ebpfMechanism) Name() string  { return m.name }
func (m *ebpfMechanism) MaxRules() int { return ebpfMaxRules }

// ProbeLocal is Probe for a pod filtering its own egress: no attach test in
// a scratch namespace, which needs CAP_SYS_ADMIN (LocalProber).
func (m *ebpfMechanism) ProbeLocal() error {
	if err := cidrfilter.ProbeLoad(m.kind); err != nil {
		if errors.Is(err, cidrfilter.ErrNotSupported) && !errors.Is(err, ErrNotSupported) {
			return fmt.Errorf("%w: %w", ErrNotSupported, err)
		}
		return err
	}
	return nil
}

func (m *ebpfMechanism) Probe() error {
	if err := cidrfilter.Probe(m.kind); err != nil {
		if errors.Is(err, cidrfilter.ErrNotSupported) && !errors.Is(err, ErrNotSupported) {
			return fmt.Errorf("%w: %w", ErrNotSupported, err)
		}
		return err
	}
	return nil
}

// Load creates and fills the maps, then attaches the program: enforcement
// starts with the complete set. o.EstablishedBypass is ignored (no kernel
// conntrack in BPF): every packet is checked.
func (m *ebpfMechanism) Load(ctx context.Context, t Target, cidrs []netip.Prefix, _ Options) (Filter, LoadInfo, error) {
	if t.Do == nil || t.Dev == "" {
		return nil, LoadInfo{}, fmt.Errorf("load %s: target needs Do and Dev", m.name)
	}
	f, st, err := cidrfilter.Load(ctx, m.kind, cidrs, cidrfilter.DefaultBatch)
	if err != nil {
		return nil, LoadInfo{}, m.wrap("load", err)
	}
	attach := f.AttachIngress
	if t.Local {
		attach = f.AttachEgress
	}
	if err := attach(t.Do, t.Dev); err != nil {
		return nil, LoadInfo{}, errors.Join(m.wrap("attach", err), f.Close())
	}
	info := LoadInfo{
		Traversal: TraversalEveryPacket,
		Method:    fmt.Sprintf("BPF_MAP_UPDATE_BATCH, %d per call (%v, max_entries %d)", st.BatchSize, m.kind, st.MaxEntries),
		Batches:   st.Batches,
	}
	return &ebpfFilter{name: m.name, f: f}, info, nil
}

func (m *ebpfMechanism) wrap(what string, err error) error {
	if errors.Is(err, cidrfilter.ErrNotSupported) {
		return fmt.Errorf("%s %s: %w: %w", what, m.name, ErrNotSupported, err)
	}
	return fmt.Errorf("%s %s: %w", what, m.name, err)
}

type ebpfFilter struct {
	name string
	f    *cidrfilter.Filter
}

func (e *ebpfFilter) Add(_ context.Context, p netip.Prefix) error {
	if err := e.f.Add(p); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	return nil
}

func (e *ebpfFilter) Remove(_ context.Context, p netip.Prefix) error {
	if err := e.f.Remove(p); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	return nil
}

func (e *ebpfFilter) Stats(context.Context) (Stats, error) {
	c, err := e.f.Counters()
	if err != nil {
		return Stats{}, fmt.Errorf("%s stats: %w", e.name, err)
	}
	s := Stats{Dropped: c.Dropped, Rules: e.f.Rules()}
	kb, err := e.f.KernelBytes()
	if err != nil {
		return s, fmt.Errorf("%s stats: %w", e.name, err)
	}
	s.KernelBytes, s.KernelBytesKnown = kb, true
	return s, nil
}

func (e *ebpfFilter) Detach(context.Context) error {
	if err := e.f.Detach(); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	return nil
}

func (e *ebpfFilter) Attach(context.Context) error {
	if err := e.f.Reattach(); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	return nil
}

func (e *ebpfFilter) Close(context.Context) error {
	if err := e.f.Close(); err != nil {
		return fmt.Errorf("%s: %w", e.name, err)
	}
	return nil
}
