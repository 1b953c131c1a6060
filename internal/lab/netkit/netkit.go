// Package netkit creates netkit device pairs for the namespace lab: the
// BPF-programmable veth replacement (Linux 6.7+, CONFIG_NETKIT) that Cilium
// uses for pods. Probe tells whether the running kernel can create them;
// AddPair creates one for a pod when it can.
package netkit

import (
	"fmt"
	"strings"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by errors that mean "this machine cannot
// create netkit devices". Check it with errors.Is.
var ErrNotSupported = internal.ErrNotSupported

// ifNameMax is IFNAMSIZ-1: the longest interface name the kernel accepts.
const ifNameMax = 15

// MTU bounds accepted by AddPair (0 means the kernel's default): 68 is the
// IPv4 minimum, 65535 netkit's max_mtu (ETH_MAX_MTU).
const (
	minMTU = 68
	maxMTU = 65535
)

// validateName applies the kernel's dev_valid_name() rules.
func validateName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s name is empty", what)
	case len(name) > ifNameMax:
		return fmt.Errorf("%s name %q is longer than %d bytes", what, name, ifNameMax)
	case name == "." || name == "..":
		return fmt.Errorf("%s name %q is reserved", what, name)
	case strings.ContainsAny(name, "/: \t\n\r\v\f"):
		return fmt.Errorf("%s name %q contains '/', ':' or whitespace", what, name)
	}
	return nil
}

// validate checks AddPair's arguments that do not need the kernel.
func validate(hostName, peerName string, peerNSFd, mtu int) error {
	if err := validateName("host", hostName); err != nil {
		return err
	}
	if err := validateName("peer", peerName); err != nil {
		return err
	}
	if peerNSFd < 0 {
		return fmt.Errorf("invalid peer namespace fd %d", peerNSFd)
	}
	if mtu != 0 && (mtu < minMTU || mtu > maxMTU) {
		return fmt.Errorf("MTU %d out of range [%d, %d] (0 = default)", mtu, minMTU, maxMTU)
	}
	return nil
}
