package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cnibench/cnibench/internal/bpf/hostrouting"
)

func init() { Register(func() Datapath { return newEBPFHostRouting() }) }

// CounterReporter is implemented by datapaths that count what they did (per
// node), for tests and reports. Keys look like "node1.redirect_peer".
type CounterReporter interface {
	Counters() (map[string]uint64, error)
}

// ebpfHostRouting is veth-routing (same /32 pods, same conntrack-engaging
// nft rules) plus Cilium-style BPF host routing: a tc ingress program on the
// pod veths and the uplink of each node redirects packets with
// bpf_redirect_peer / bpf_redirect_neigh after a bpf_fib_lookup, bypassing
// the node's forwarding path and netfilter.
type ebpfHostRouting struct {
	*Routed

	mu    sync.Mutex
	progs [2]*hostrouting.Program
}

func newEBPFHostRouting() *ebpfHostRouting {
	e := &ebpfHostRouting{}
	e.Routed = NewRouted(RoutedConfig{
		Name:        "ebpf-host-routing",
		Description: "veth-routing topology with Cilium-style BPF host routing (tc ingress, fib lookup, redirect_peer/neigh) bypassing netfilter",
		PacketPath: "client pod eth0 -> veth -> node1 tc ingress BPF (fib lookup, redirect_neigh) -> wire0 -> " +
			"node2 wire0 tc ingress BPF (fib lookup, redirect_peer) -> server pod eth0; node IP stack and nft forward bypassed " +
			"(same node: client pod veth tc ingress BPF -> redirect_peer -> server pod)",
		Probe:     probeHostRouting,
		NodeReady: e.nodeReady,
		Teardown:  e.teardown,
	})
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
		return &UnsupportedError{Feature: "BPF host routing", Reason: err.Error()}
	}
	return fmt.Errorf("probe BPF host routing: %w", err)
}

func (e *ebpfHostRouting) nodeReady(ctx context.Context, env *Env, node RoutedNode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := hostrouting.Load()
	if err != nil {
		return fmt.Errorf("load BPF host routing for %s: %w", node.NS.Name, err)
	}
	e.mu.Lock()
	e.progs[node.Index] = p
	e.mu.Unlock()
	err = node.NS.Do(func() error {
		for _, idx := range node.PodIndexes {
			if err := p.AttachFromPod(idx); err != nil {
				return fmt.Errorf("pod veth ifindex %d: %w", idx, err)
			}
		}
		if err := p.AttachFromWire(node.WireIndex); err != nil {
			return fmt.Errorf("%s ifindex %d: %w", WireIf, node.WireIndex, err)
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
		out[n+"redirect_neigh"] = c.RedirectNeigh
		out[n+"pass"] = c.Pass
		out[n+"pass_fib"] = c.PassFIB
		out[n+"drop"] = c.Drop
	}
	return out, nil
}
