//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nslb

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/cnibench/cnibench/internal/nsrun"
)

// tcxAttachment is one program to attach at one interface's TCX ingress.
type tcxAttachment struct {
	name    string
	prog    *ebpf.Program
	ifindex int
}

// attachIngress attaches every program of at inside the namespace do
// enters and returns the links made, also those made before a failure
// (the caller closes them).
func attachIngress(do func(func() error) error, at []tcxAttachment) ([]link.Link, error) {
	if do == nil {
		do = func(f func() error) error { return f() }
	}
	var links []link.Link
	err := do(func() error {
		for _, a := range at {
			l, err := link.AttachTCX(link.TCXOptions{Interface: a.ifindex, Program: a.prog, Attach: ebpf.AttachTCXIngress})
			if err != nil {
				if errors.Is(err, ebpf.ErrNotSupported) {
					err = fmt.Errorf("%w: TCX: %w", ErrNotSupported, err)
				}
				return fmt.Errorf("attach %s to TCX ingress of ifindex %d: %w", a.name, a.ifindex, err)
			}
			links = append(links, l)
		}
		return nil
	})
	return links, err
}

// Probe reports whether this machine can run the L4 load balancer: tc
// programs, LRU hash and LPM trie maps, loading both objects (the verifier
// checks that bpf_redirect_neigh and bpf_skb_set_tunnel_key exist), and
// TCX attach on the loopback of a scratch network namespace. It returns
// nil or an error wrapping ErrNotSupported that says why.
func Probe() error {
	if err := features.HaveProgramType(ebpf.SchedCLS); err != nil {
		return fmt.Errorf("%w: tc (sched_cls) BPF programs: %w", ErrNotSupported, err)
	}
	for _, mt := range []ebpf.MapType{ebpf.LRUHash, ebpf.LPMTrie} {
		if err := features.HaveMapType(mt); err != nil {
			return fmt.Errorf("%w: BPF map type %s: %w", ErrNotSupported, mt, err)
		}
	}
	notSupported := func(err error) error {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	lb, err := LoadLB(LBConfig{
		ExtIfindex: 1, SNATAddr: netip.MustParseAddr("192.0.2.1"),
		Tunnel: &Tunnel{Ifindex: 1, MAC: []byte{2, 0, 0, 0, 0, 1}},
	})
	if err != nil {
		return notSupported(err)
	}
	defer lb.Close()
	w, err := LoadWorker(WorkerConfig{})
	if err != nil {
		return notSupported(err)
	}
	defer w.Close()
	err = nsrun.Scratch(func() error {
		return errors.Join(lb.Attach(nil), lb.Detach(), w.Attach(nil, 1, []int{1}), w.Detach())
	})
	if err != nil {
		return notSupported(err)
	}
	return nil
}
