//go:build !linux

package netkit

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
)

var errNotSupportedOnOS = fmt.Errorf("%w on %s: netkit is a Linux device", ErrNotSupported, runtime.GOOS)

// Probe always reports ErrNotSupported on this platform.
func Probe() error { return errNotSupportedOnOS }

// AddPair validates its arguments and then fails with ErrNotSupported on
// this platform.
func AddPair(h *netlink.Handle, hostName, peerName string, peerNSFd int, mtu int) error {
	if err := validate(hostName, peerName, peerNSFd, mtu); err != nil {
		return fmt.Errorf("add netkit pair: %w", err)
	}
	return fmt.Errorf("add netkit pair %s/%s: %w", hostName, peerName, errNotSupportedOnOS)
}
