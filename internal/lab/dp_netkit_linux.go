package lab

import (
	"context"
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/lab/netkit"
)

func init() { Register(func() Datapath { return &netkitDP{} }) }

// netkitDP stands for L3 pods on netkit devices (kernel 6.7+, CONFIG_NETKIT)
// instead of veth pairs. Its Probe asks the netkit package to create a
// throw-away pair in a scratch namespace; on kernels without netkit the
// datapath is reported as skipped with the kernel's answer. The topology
// itself is not written yet (no netkit kernel to verify it on), so even a
// netkit kernel reports it as skipped rather than measure something
// unverified.
type netkitDP struct{}

func (*netkitDP) Name() string { return "netkit" }
func (*netkitDP) Description() string {
	return "L3 pods on netkit devices (BPF-programmable veth replacement, Cilium 1.16+)"
}
func (*netkitDP) PacketPath() string {
	return "client pod netkit peer -> netkit primary in node1 (BPF or forward) -> node1 IP stack -> wire0 -> " +
		"node2 IP stack -> netkit primary -> server pod netkit peer"
}

func (*netkitDP) Probe() error {
	if err := netkit.Probe(); err != nil {
		if errors.Is(err, netkit.ErrNotSupported) {
			return &UnsupportedError{Feature: "netkit device", Reason: err.Error()}
		}
		return fmt.Errorf("probe netkit: %w", err)
	}
	return &UnsupportedError{Feature: "netkit datapath", Reason: "the kernel has netkit, but cnibench's netkit topology is not implemented yet"}
}

func (*netkitDP) Setup(context.Context, *Env) (*Topology, error) {
	return nil, &UnsupportedError{Feature: "netkit datapath", Reason: "topology not implemented yet"}
}

func (*netkitDP) Teardown(context.Context) error { return nil }
