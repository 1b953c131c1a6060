package filter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/cnibench/cnibench/internal/bpf/cidrfilter"
	"github.com/cnibench/cnibench/internal/scenario"
)

func init() {
	Register(MechCiliumLike, func() Mechanism {
		return &ciliumLike{lpm: ebpfMechanism{name: MechCiliumLike, kind: cidrfilter.KindLPM}}
	})
}

// ciliumLike is the cilium-like composite (composite.go): the ebpf-lpm
// deny map at TCX ingress of the pod's node-side veth, kube-proxy's
// nftables chains in the node namespace, and the deny set capped at
// CiliumPolicyMapMax (MaxRules, and Add beyond it).
type ciliumLike struct{ lpm ebpfMechanism }

func (m *ciliumLike) Name() string { return MechCiliumLike }

// MaxRules is Cilium's policy map limit.
func (m *ciliumLike) MaxRules() int { return CiliumPolicyMapMax }

// LimitReason says why larger deny sets are refused (limitReasoner).
func (m *ciliumLike) LimitReason() string { return ciliumLimitReason }

func (m *ciliumLike) Probe() error {
	if err := needPrograms("nftables", "nft"); err != nil {
		return err
	}
	return m.lpm.Probe()
}

// Load installs the kube-proxy table first (the node's state before a
// policy arrives), then loads and attaches the deny map: enforcement
// starts with the complete set. The map is checked for every packet.
func (m *ciliumLike) Load(ctx context.Context, t Target, cidrs []netip.Prefix, o Options) (Filter, LoadInfo, error) {
	if len(cidrs) > CiliumPolicyMapMax {
		return nil, LoadInfo{}, fmt.Errorf("%w: %s: %d deny CIDRs: %s", scenario.ErrTooLarge, MechCiliumLike, len(cidrs), ciliumLimitReason)
	}
	if _, err := runIn(ctx, t, []byte(kubeProxyRules()), "nft", "-f", "-"); err != nil {
		return nil, LoadInfo{}, errors.Join(fmt.Errorf("load the kube-proxy nftables table: %w", err),
			deleteKubeProxyTable(context.WithoutCancel(ctx), t))
	}
	inner, info, err := m.lpm.Load(ctx, t, cidrs, o)
	if err != nil {
		return nil, LoadInfo{}, errors.Join(err, deleteKubeProxyTable(context.WithoutCancel(ctx), t))
	}
	info.Method += fmt.Sprintf(" + kube-proxy nftables table %s (%d services), map capped at %d", kubeProxyTable, len(kubeProxyServices), CiliumPolicyMapMax)
	info.Batches++
	return &ciliumFilter{Filter: inner, t: t, rules: len(cidrs)}, info, nil
}

// deleteKubeProxyTable removes the table if it exists.
func deleteKubeProxyTable(ctx context.Context, t Target) error {
	res, err := runIn(ctx, t, nil, "nft", "list", "tables", "ip")
	if err != nil {
		return fmt.Errorf("list nftables tables: %w", err)
	}
	if !strings.Contains(res.Stdout, "table ip "+kubeProxyTable+"\n") && !strings.HasSuffix(res.Stdout, "table ip "+kubeProxyTable) {
		return nil
	}
	if _, err := runIn(ctx, t, nil, "nft", "delete", "table", "ip", kubeProxyTable); err != nil {
		return fmt.Errorf("delete the kube-proxy nftables table: %w", err)
	}
	return nil
}

// ciliumFilter is the LPM filter plus the kube-proxy table; Detach and
// Attach move the BPF program only (the table filters nothing the probes
// send).
type ciliumFilter struct {
	Filter
	t      Target
	rules  int
	closed bool
}

// Add refuses to grow the map beyond Cilium's limit, as the agent would.
func (f *ciliumFilter) Add(ctx context.Context, p netip.Prefix) error {
	if f.rules >= CiliumPolicyMapMax {
		return fmt.Errorf("%w: %s: adding %s to %d deny CIDRs: %s", scenario.ErrTooLarge, MechCiliumLike, p, f.rules, ciliumLimitReason)
	}
	if err := f.Filter.Add(ctx, p); err != nil {
		return err
	}
	f.rules++
	return nil
}

func (f *ciliumFilter) Remove(ctx context.Context, p netip.Prefix) error {
	if err := f.Filter.Remove(ctx, p); err != nil {
		return err
	}
	f.rules--
	return nil
}

func (f *ciliumFilter) Close(ctx context.Context) error {
	if f.closed {
		return nil
	}
	f.closed = true
	return errors.Join(f.Filter.Close(ctx), deleteKubeProxyTable(context.WithoutCancel(ctx), f.t))
}
