package wireguard

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"

	"github.com/cnibench/cnibench/internal/nsrun"
)

// DoFunc runs f in a network namespace (lab.NS.Do, or a func wrapping
// nsrun.Do): sockets and links f creates belong to that namespace.
type DoFunc func(f func() error) error

// probeIface is the link ProbeKernel creates in its scratch namespace.
const probeIface = "wgprobe0"

// ProbeKernel tells whether this kernel can create a "wireguard" link: it
// tries in a scratch network namespace (which disappears with whatever was
// made there). It returns nil, or an error wrapping ErrNotSupported with
// the reason.
func ProbeKernel() error {
	return nsrun.Scratch(func() error {
		return addKernelLink(probeIface, 0)
	})
}

// addKernelLink creates a wireguard link in the calling thread's namespace.
func addKernelLink(name string, mtu int) error {
	err := netlink.LinkAdd(&netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EOPNOTSUPP):
		// What `ip link add type wireguard` reports as "Unknown device
		// type": no wireguard module built in or loadable.
		return fmt.Errorf("kernel wireguard %w: create wireguard link: %v (ip-link's \"Unknown device type\": no wireguard module)", ErrNotSupported, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("create wireguard link %s: %w (needs CAP_NET_ADMIN)", name, err)
	}
	return fmt.Errorf("create wireguard link %s: %w", name, err)
}

// SetupKernel creates the kernel WireGuard device cfg.Iface in the
// namespace do runs in, configures it with wgctrl (from a thread in that
// namespace), sets its MTU and address and brings it up. On error nothing
// is left behind. On a kernel without WireGuard the error wraps
// ErrNotSupported.
func SetupKernel(do DoFunc, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("kernel wireguard config: %w", err)
	}
	return do(func() error {
		if err := addKernelLink(cfg.Iface, cfg.mtu()); err != nil {
			return err
		}
		if err := configureKernel(cfg); err != nil {
			if l, lerr := netlink.LinkByName(cfg.Iface); lerr == nil {
				_ = netlink.LinkDel(l) // ours: just created
			}
			return err
		}
		return nil
	})
}

func configureKernel(cfg Config) error {
	c, err := wgctrl.New()
	if err != nil {
		return fmt.Errorf("wgctrl: %w", err)
	}
	defer c.Close()
	if err := c.ConfigureDevice(cfg.Iface, cfg.wgtypesConfig()); err != nil {
		return fmt.Errorf("configure wireguard device %s: %w", cfg.Iface, err)
	}
	return linkUp(cfg)
}

// linkUp sets cfg's MTU and address on cfg.Iface and sets it up, through a
// netlink socket of the calling thread's namespace.
func linkUp(cfg Config) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	l, err := h.LinkByName(cfg.Iface)
	if err != nil {
		return fmt.Errorf("find %s: %w", cfg.Iface, err)
	}
	if l.Attrs().MTU != cfg.mtu() {
		if err := h.LinkSetMTU(l, cfg.mtu()); err != nil {
			return fmt.Errorf("set MTU %d on %s: %w", cfg.mtu(), cfg.Iface, err)
		}
	}
	if cfg.Address.IsValid() {
		a := &netlink.Addr{IPNet: prefixNet(cfg.Address)}
		if err := h.AddrAdd(l, a); err != nil {
			return fmt.Errorf("add address %s to %s: %w", cfg.Address, cfg.Iface, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("set %s up: %w", cfg.Iface, err)
	}
	return nil
}

// DeleteKernel removes the kernel device iface from the namespace do runs
// in; a missing device is not an error.
func DeleteKernel(do DoFunc, iface string) error {
	return do(func() error {
		l, err := netlink.LinkByName(iface)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return fmt.Errorf("find %s: %w", iface, err)
		}
		if err := netlink.LinkDel(l); err != nil {
			return fmt.Errorf("delete %s: %w", iface, err)
		}
		return nil
	})
}
