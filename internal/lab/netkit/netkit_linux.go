package netkit

import (
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/nsrun"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// errNoNetkit is the reason reported when the kernel does not know the
// "netkit" link kind.
var errNoNetkit = fmt.Errorf("%w: kernel has no netkit device (CONFIG_NETKIT)", ErrNotSupported)

// Probe creates and deletes a netkit pair in a scratch network namespace.
// It returns nil if that works, or an error wrapping ErrNotSupported with
// the reason (no netkit in the kernel, not privileged).
func Probe() error {
	scratch, err := newScratchNS()
	if err != nil {
		return fmt.Errorf("%w: netkit probe: %w", ErrNotSupported, err)
	}
	// Closing the last reference destroys the namespace and anything in it.
	defer scratch.Close()

	h, err := netlink.NewHandleAt(scratch)
	if err != nil {
		return fmt.Errorf("%w: netkit probe: netlink handle: %w", ErrNotSupported, err)
	}
	defer h.Close()

	const host, peer = "cnb-nk0", "cnb-nk1"
	if err := AddPair(h, host, peer, int(scratch), 0); err != nil {
		if errors.Is(err, ErrNotSupported) {
			return fmt.Errorf("netkit probe: %w", err)
		}
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("%w: netkit probe: creating links needs CAP_NET_ADMIN: %w", ErrNotSupported, err)
		}
		return fmt.Errorf("%w: netkit probe: %w", ErrNotSupported, err)
	}
	l, err := h.LinkByName(host)
	if err != nil {
		return fmt.Errorf("netkit probe: created pair not found: %w", err)
	}
	if err := h.LinkDel(l); err != nil {
		return fmt.Errorf("netkit probe: delete pair: %w", err)
	}
	return nil
}

// AddPair creates a netkit pair in L3 mode through h: hostName stays in h's
// namespace (the node), peerName is created directly in the namespace
// referred to by peerNSFd (the pod). Both ends forward by default (no BPF
// program attached means the packet is passed on) and use the kernel's
// default scrubbing. mtu 0 keeps the kernel default. The devices are left
// down; the caller assigns addresses and sets them up.
//
// If the kernel has no netkit support the error wraps ErrNotSupported.
func AddPair(h *netlink.Handle, hostName, peerName string, peerNSFd int, mtu int) error {
	if h == nil {
		return errors.New("add netkit pair: nil netlink handle")
	}
	if err := validate(hostName, peerName, peerNSFd, mtu); err != nil {
		return fmt.Errorf("add netkit pair: %w", err)
	}
	nk := &netlink.Netkit{
		LinkAttrs:  netlink.LinkAttrs{Name: hostName, MTU: mtu},
		Mode:       netlink.NETKIT_MODE_L3,
		Policy:     netlink.NETKIT_POLICY_FORWARD,
		PeerPolicy: netlink.NETKIT_POLICY_FORWARD,
		// The library sends the scrub attributes unconditionally; keep
		// the kernel's own default rather than its zero value (NONE).
		Scrub:     netlink.NETKIT_SCRUB_DEFAULT,
		PeerScrub: netlink.NETKIT_SCRUB_DEFAULT,
	}
	nk.SetPeerAttrs(&netlink.LinkAttrs{Name: peerName, MTU: mtu, Namespace: netlink.NsFd(peerNSFd)})
	if err := h.LinkAdd(nk); err != nil {
		// rtnetlink answers EOPNOTSUPP ("Unknown device type") for a link
		// kind the kernel does not have and cannot load.
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("add netkit pair %s/%s: %w (%w)", hostName, peerName, errNoNetkit, err)
		}
		return fmt.Errorf("add netkit pair %s/%s: %w", hostName, peerName, err)
	}
	return nil
}

// newScratchNS returns a handle to a new, unnamed network namespace without
// moving the caller's thread: the unshare happens on a dedicated locked
// thread, which is discarded if it cannot be switched back.
func newScratchNS() (netns.NsHandle, error) { return nsrun.NewScratch() }
