package datapaths

import (
	"context"
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/netkit"
)

func init() { lab.Register(func() lab.Datapath { return &netkitDP{} }) }

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
			return &lab.UnsupportedError{Feature: "netkit device", Reason: err.Error()}
		}
		return fmt.Errorf("probe netkit: %w", err)
	}
	return &lab.UnsupportedError{Feature: "netkit datapath", Reason: "the kernel has netkit, but cnibench's netkit topology is not implemented yet"}
}

func (*netkitDP) Setup(context.Context, *lab.Env) (*lab.Topology, error) {
	return nil, &lab.UnsupportedError{Feature: "netkit datapath", Reason: "topology not implemented yet"}
}

func (*netkitDP) Teardown(context.Context) error { return nil }
