//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The build constraint matches the generated *_bpfel.go (only the
// little-endian objects are committed); nslb_other.go covers the rest.

package nslb

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/mapval"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
)

// LB is the load-balancer node's loaded programs and maps and, once
// attached, their TCX links. Its methods are for one goroutine at a time.
type LB struct {
	cfg    LBConfig
	objs   lbObjects
	links  []link.Link
	closed bool
}

// LoadLB creates the LB's maps for cfg and loads its programs. Nothing is
// attached yet.
func LoadLB(cfg LBConfig) (*LB, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l, err := lbEntries(cfg.Services, cfg.MaglevSize, cfg.Tunnel != nil)
	if err != nil {
		return nil, err
	}
	allow, _ := allowKeys(cfg.Allow) // checked by validate
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadLb()
	if err != nil {
		return nil, fmt.Errorf("parse lb BPF object: %w", err)
	}
	consts := map[string]uint32{
		"maglev_m":    uint32(cfg.MaglevSize),
		"dsr":         b2u(cfg.DSR),
		"tunnel":      b2u(cfg.Tunnel != nil),
		"ext_ifindex": uint32(cfg.ExtIfindex),
	}
	if !cfg.DSR {
		consts["snat_addr"] = mapval.Addr4(cfg.SNATAddr)
	}
	var st settingsVal
	st.Firewall = b2u(cfg.Firewall)
	if t := cfg.Tunnel; t != nil {
		consts["tunnel_ifindex"] = uint32(t.Ifindex)
		consts["vni"] = t.VNI
		copy(st.TunnelSMAC[:], t.MAC)
	}
	for name, v := range consts {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("set lb constant %s: %w", name, err)
		}
	}
	spec.Maps["services"].MaxEntries = uint32(max(len(l.keys), 1))
	spec.Maps["maglev"].MaxEntries = uint32(max(len(l.table), 1))
	spec.Maps["backends"].MaxEntries = uint32(max(len(l.backends), 1))
	lb := &LB{cfg: cfg}
	if err := spec.LoadAndAssign(&lb.objs, nil); err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: load lb programs: %w", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("load lb programs: %w", err)
	}
	if err := errors.Join(
		fill("backends", lb.objs.Backends, indexes(len(l.backends)), l.backends, len(l.backends)),
		fill("maglev", lb.objs.Maglev, indexes(len(l.table)), l.table, len(l.table)),
		fill("services", lb.objs.Services, l.keys, l.vals, len(l.keys)),
		fillAllow(lb.objs.Allow, allow),
		putSettings(lb.objs.Settings, st),
	); err != nil {
		return nil, errors.Join(err, lb.Close())
	}
	return lb, nil
}

// Attach attaches lb_ingress at TCX ingress of cfg.ExtIfindex and, in
// snat mode with a tunnel, lb_tunnel_ingress at the tunnel device's (where
// the replies come back decapsulated). do runs its function inside the
// LB's network namespace (ifindexes are per namespace; nil: the caller's
// thread's).
func (lb *LB) Attach(do func(func() error) error) error {
	if len(lb.links) > 0 {
		return errors.New("attach lb programs: already attached")
	}
	at := []tcxAttachment{{"lb_ingress", lb.objs.LbIngress, lb.cfg.ExtIfindex}}
	if lb.cfg.Tunnel != nil && !lb.cfg.DSR {
		at = append(at, tcxAttachment{"lb_tunnel_ingress", lb.objs.LbTunnelIngress, lb.cfg.Tunnel.Ifindex})
	}
	links, err := attachIngress(do, at)
	lb.links = links
	if err != nil {
		return errors.Join(err, lb.Detach())
	}
	return nil
}

// Detach removes the TCX links; the maps stay.
func (lb *LB) Detach() error {
	err := bpflink.CloseAll(lb.links)
	lb.links = nil
	if err != nil {
		return fmt.Errorf("detach lb programs: %w", err)
	}
	return nil
}

// SetFirewall turns the firewall on or off while the programs run.
func (lb *LB) SetFirewall(on bool) error {
	var st settingsVal
	if err := lb.objs.Settings.Lookup(uint32(0), &st); err != nil {
		return fmt.Errorf("read lb settings: %w", err)
	}
	st.Firewall = b2u(on)
	return putSettings(lb.objs.Settings, st)
}

// Counters sums the per-CPU counters.
func (lb *LB) Counters() (LBCounters, error) {
	c, err := mapval.SumPerCPU(lb.objs.Counters, lbCntMax)
	if err != nil {
		return LBCounters{}, fmt.Errorf("lb: %w", err)
	}
	return LBCounters{
		New: c[lbCntNew], Forward: c[lbCntFwd], Reverse: c[lbCntRev],
		NoBackend: c[lbCntNoBackend], FirewallDrops: c[lbCntFwDrop], SNATFailures: c[lbCntSNATFail],
	}, nil
}

// FirewallDropsByCPU is the firewall's drop count per CPU, indexed by CPU
// number: where lb_ingress ran for the packets it dropped.
func (lb *LB) FirewallDropsByCPU() ([]uint64, error) {
	c, err := mapval.PerCPU(lb.objs.Counters, lbCntFwDrop)
	if err != nil {
		return nil, fmt.Errorf("lb: %w", err)
	}
	return c, nil
}

// Close detaches and frees everything; it may be called more than once.
func (lb *LB) Close() error {
	if lb.closed {
		return nil
	}
	lb.closed = true
	return errors.Join(lb.Detach(), lb.objs.Close())
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func indexes(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// fill writes n keys and values into m in one batch.
func fill(what string, m *ebpf.Map, keys, vals any, n int) error {
	if n == 0 {
		return nil
	}
	if _, err := m.BatchUpdate(keys, vals, nil); err != nil {
		return fmt.Errorf("fill %s: %w", what, err)
	}
	return nil
}

// fillAllow writes the firewall's allow list, one entry at a time (it is
// short: at most MaxAllow prefixes).
func fillAllow(m *ebpf.Map, keys []lpmKey) error {
	for _, k := range keys {
		if err := m.Put(k, uint32(1)); err != nil {
			return fmt.Errorf("fill allow list: %w", err)
		}
	}
	return nil
}

func putSettings(m *ebpf.Map, st settingsVal) error {
	if err := m.Put(uint32(0), st); err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	return nil
}
