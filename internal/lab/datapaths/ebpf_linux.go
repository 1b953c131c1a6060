package datapaths

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cnibench/cnibench/internal/bpf/hostrouting"
	"github.com/cnibench/cnibench/internal/lab"
)

func init() {
	lab.Register(func() lab.Datapath { return newEBPFHostRouting(hostrouting.Options{}) })
	lab.Register(func() lab.Datapath { return newEBPFHostRouting(hostrouting.Options{Bare: true}) })
	lab.RegisterOptIn(func() lab.Datapath { return newEBPFHostRouting(hostrouting.Options{RedirectHost: true}) })
}

// ebpfHostRouting is veth-routing (same /32 pods, same conntrack-engaging
// nft rules) plus Cilium-style BPF host routing: a tc ingress program on the
// pod veths and the uplink of each node redirects packets with
// bpf_redirect_peer / bpf_redirect_neigh after a bpf_fib_lookup, bypassing
// the node's forwarding path and netfilter. The full model also looks every
// redirected packet up in a BPF connection-tracking map (and updates it) and
// in a policy map, as Cilium does; the bare variant only redirects. The
// redirect variant (ebpf-host-routing-redirect) is the full model with one
// difference: packets for a local pod are sent with bpf_redirect to the
// egress of the pod's host-side veth (Calico eBPF style: veth_xmit, then the
// pod's per-CPU backlog) instead of bpf_redirect_peer.
type ebpfHostRouting struct {
	*Routed
	opts hostrouting.Options

	mu    sync.Mutex
	progs [2]*hostrouting.Program
}

func newEBPFHostRouting(opts hostrouting.Options) *ebpfHostRouting {
	e := &ebpfHostRouting{opts: opts}
	cfg := RoutedConfig{
		Name: "ebpf-host-routing",
		Description: "veth-routing topology with Cilium-style BPF host routing (tc ingress, fib lookup, redirect_peer/neigh): " +
			"BPF conntrack map lookup+update and policy map lookup per packet; kernel conntrack and nft forward bypassed",
		PacketPath: "client pod eth0 -> veth -> node1 tc ingress BPF (CT map, policy map, fib lookup, redirect_neigh) -> wire0 -> " +
			"node2 wire0 tc ingress BPF (CT map, policy map, fib lookup, redirect_peer) -> server pod eth0; node IP stack, " +
			"nft forward and kernel conntrack bypassed (same node: client pod veth tc ingress BPF -> redirect_peer -> server pod)",
		Probe:     probeHostRouting,
		NodeReady: e.nodeReady,
		Teardown:  e.teardown,
		Claims:    &lab.PathClaims{BPF: true, NftForward: true},
	}
	switch {
	case opts.Bare:
		cfg.Name = "ebpf-host-routing-bare"
		cfg.Description = "ebpf-host-routing without the BPF conntrack and policy maps: the bare redirect, an upper bound " +
			"rather than a model of Cilium; kernel conntrack and nft forward bypassed"
		cfg.PacketPath = "client pod eth0 -> veth -> node1 tc ingress BPF (fib lookup, redirect_neigh) -> wire0 -> " +
			"node2 wire0 tc ingress BPF (fib lookup, redirect_peer) -> server pod eth0; node IP stack, nft forward and " +
			"kernel conntrack bypassed (same node: client pod veth tc ingress BPF -> redirect_peer -> server pod)"
	case opts.RedirectHost:
		cfg.Name = "ebpf-host-routing-redirect"
		cfg.Description = "ebpf-host-routing (same BPF conntrack and policy maps) delivering to local pods Calico-eBPF-style: " +
			"bpf_redirect to the host-side veth's egress (veth_xmit, then the pod's backlog) instead of bpf_redirect_peer; " +
			"kernel conntrack and nft forward bypassed"
		cfg.PacketPath = "client pod eth0 -> veth -> node1 tc ingress BPF (CT map, policy map, fib lookup, redirect_neigh) -> wire0 -> " +
			"node2 wire0 tc ingress BPF (CT map, policy map, fib lookup, redirect to host veth egress) -> host veth xmit -> " +
			"server pod eth0 (per-CPU backlog); node IP stack, nft forward and kernel conntrack bypassed (same node: client pod " +
			"veth tc ingress BPF -> redirect to the server pod's host veth egress -> server pod eth0 (per-CPU backlog))"
	}
	e.Routed = NewRouted(cfg)
	return e
}

// OwnedByProcess: the TCX links live as long as this process's file
// descriptors.
func (*ebpfHostRouting) OwnedByProcess() bool { return true }

func probeHostRouting() error {
	err := hostrouting.Probe()
	if err == nil {
		return nil
	}
	if errors.Is(err, hostrouting.ErrNotSupported) {
		return &lab.UnsupportedError{Feature: "BPF host routing", Reason: err.Error()}
	}
	return fmt.Errorf("probe BPF host routing: %w", err)
}

func (e *ebpfHostRouting) nodeReady(ctx context.Context, env *lab.Env, node RoutedNode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := hostrouting.Load(e.opts)
	if err != nil {
		return fmt.Errorf("load BPF host routing for %s: %w", node.NS.Name, err)
	}
	e.mu.Lock()
	e.progs[node.Index] = p
	e.mu.Unlock()
	if !e.opts.Bare {
		// The pods' policy: traffic from the pod supernet allowed, as an
		// allow-all-pods network policy would (a hit in the policy map).
		if err := p.SetPolicy(lab.PodSupernet, true); err != nil {
			return fmt.Errorf("BPF host routing policy in %s: %w", node.NS.Name, err)
		}
	}
	err = node.NS.Do(func() error {
		for _, idx := range node.PodIndexes {
			if err := p.AttachFromPod(idx); err != nil {
				return fmt.Errorf("pod veth ifindex %d: %w", idx, err)
			}
		}
		if err := p.AttachFromWire(node.WireIndex); err != nil {
			return fmt.Errorf("%s ifindex %d: %w", lab.WireIf, node.WireIndex, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("attach BPF host routing in %s: %w", node.NS.Name, err)
	}
	env.Logger.Debug("BPF host routing attached", "node", node.NS.Name, "mode", p.AttachMode())
	return nil
}

func (e *ebpfHostRouting) teardown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for i, p := range e.progs {
		if p == nil {
			continue
		}
		if err := p.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node%d: %w", i+1, err))
		}
		e.progs[i] = nil
	}
	return errors.Join(errs...)
}

// Counters returns the BPF program's counters of both nodes.
func (e *ebpfHostRouting) Counters() (map[string]uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]uint64{}
	for i, p := range e.progs {
		if p == nil {
			continue
		}
		c, err := p.Counters()
		if err != nil {
			return nil, fmt.Errorf("node%d: %w", i+1, err)
		}
		n := fmt.Sprintf("node%d.", i+1)
		out[n+"redirect_peer"] = c.RedirectPeer
		out[n+"redirect_host"] = c.RedirectHost
		out[n+"redirect_neigh"] = c.RedirectNeigh
		out[n+"pass"] = c.Pass
		out[n+"pass_fib"] = c.PassFIB
		out[n+"drop"] = c.Drop
		if !e.opts.Bare {
			out[n+"ct_new"] = c.CTNew
			out[n+"ct_established"] = c.CTEstablished
			out[n+"ct_reply"] = c.CTReply
			out[n+"policy_denied"] = c.PolicyDenied
		}
	}
	return out, nil
}

// CTEntries returns the number of entries in each node's BPF
// connection-tracking map.
func (e *ebpfHostRouting) CTEntries() ([2]int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out [2]int
	for i, p := range e.progs {
		if p == nil {
			continue
		}
		n, err := p.CTEntries()
		if err != nil {
			return out, fmt.Errorf("node%d: %w", i+1, err)
		}
		out[i] = n
	}
	return out, nil
}
