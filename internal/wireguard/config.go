package wireguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Config is one end of a node-to-node tunnel: this node's device and its
// single peer (the other node). The same Config drives the kernel and the
// userspace implementation.
type Config struct {
	// Iface is the device name, e.g. "wg0" (at most 15 bytes).
	Iface string
	// PrivateKey is this node's key; PeerPublicKey the other node's.
	PrivateKey    Key
	PeerPublicKey Key
	// ListenPort is the UDP port to listen on; 0 lets the kernel choose.
	ListenPort int
	// PeerEndpoint is where the peer listens (its wire address); invalid
	// (zero) means unknown until the peer first writes.
	PeerEndpoint netip.AddrPort
	// AllowedIPs are the inner source/destination ranges of the peer: its
	// pod CIDR (and tunnel address, if any).
	AllowedIPs []netip.Prefix
	// Address, if valid, is assigned to the device (a tunnel address; the
	// lab's pod traffic needs none).
	Address netip.Prefix
	// MTU of the device; 0 means DefaultMTU.
	MTU int
	// PersistentKeepalive, if not zero, makes the device send a keepalive
	// that often (whole seconds); the lab's nodes need none.
	PersistentKeepalive time.Duration
}

// Overheads of WireGuard's encapsulation: outer IP header (20 bytes for
// IPv4, 40 for IPv6) + UDP (8) + WireGuard's data message header (type 4,
// receiver index 4, counter 8) and Poly1305 tag (16) = 32. WireGuard also
// pads the inner packet to a multiple of 16 bytes, but never beyond the
// device MTU, so an MTU-sized inner packet costs exactly the overhead.
const (
	overheadIPv4 = 20 + 8 + 32
	overheadIPv6 = 40 + 8 + 32

	// DefaultMTU is wireguard-go's and wg-quick's default for a 1500-byte
	// wire: 1500 minus the IPv6 overhead.
	DefaultMTU = 1420

	minMTU = 576   // the smallest IPv4 datagram every host must take
	maxMTU = 65535 // beyond this no IP packet fits
)

// Overhead is what WireGuard adds to every inner packet on a wire of the
// given outer family: 60 bytes over IPv4, 80 over IPv6. Cilium subtracts a
// flat 80 (pkg/mtu WireguardOverhead, covering an IPv6 outer header whatever
// the family); Calico subtracts 60 for IPv4 (1440 on a 1500-byte network)
// and 80 for IPv6 (1420).
func Overhead(ipv6 bool) int {
	if ipv6 {
		return overheadIPv6
	}
	return overheadIPv4
}

// PodMTU is the largest inner packet a node-to-node tunnel over an IPv4
// wire of wireMTU carries without fragmenting: the device MTU the lab sets
// (and the pods' MTU, so that nothing is fragmented or dropped for size).
// The lab's wire is IPv4 only, so it uses the exact IPv4 overhead, as Calico
// does for IPv4; it returns 0 if the wire is too small to carry a tunnel.
func PodMTU(wireMTU int) int {
	mtu := wireMTU - Overhead(false)
	if mtu < minMTU {
		return 0
	}
	return mtu
}

// mtu returns the device MTU cfg asks for.
func (c Config) mtu() int {
	if c.MTU == 0 {
		return DefaultMTU
	}
	return c.MTU
}

// Validate checks c. Its errors name the JSON field at fault, e.g.
// "allowed_ips[1]: 10.0.0.1/8 has host bits set (want 10.0.0.0/8)".
func (c Config) Validate() error {
	if err := validIfaceName(c.Iface); err != nil {
		return fmt.Errorf("iface: %w", err)
	}
	if c.PrivateKey.IsZero() {
		return errors.New("private_key: missing")
	}
	if c.PeerPublicKey.IsZero() {
		return errors.New("peer_public_key: missing")
	}
	if pub, err := c.PrivateKey.PublicKey(); err == nil && pub == c.PeerPublicKey {
		return errors.New("peer_public_key: is this node's own public key")
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		return fmt.Errorf("listen_port: %d is not between 0 and 65535", c.ListenPort)
	}
	if c.PeerEndpoint.IsValid() {
		if a := c.PeerEndpoint.Addr(); a.IsUnspecified() || a.Zone() != "" || c.PeerEndpoint.Port() == 0 {
			return fmt.Errorf("peer_endpoint: %s is not an address and a port to send to", c.PeerEndpoint)
		}
	}
	if len(c.AllowedIPs) == 0 {
		return errors.New("allowed_ips: missing (the peer's pod CIDR)")
	}
	for i, p := range c.AllowedIPs {
		if err := validPrefix(p); err != nil {
			return fmt.Errorf("allowed_ips[%d]: %w", i, err)
		}
	}
	if c.Address.IsValid() && c.Address.Addr().Zone() != "" {
		return fmt.Errorf("address: %s has a zone", c.Address)
	}
	if c.MTU != 0 && (c.MTU < minMTU || c.MTU > maxMTU) {
		return fmt.Errorf("mtu: %d is not between %d and %d (0: %d)", c.MTU, minMTU, maxMTU, DefaultMTU)
	}
	if ka := c.PersistentKeepalive; ka < 0 || ka > 65535*time.Second || ka%time.Second != 0 {
		return fmt.Errorf("persistent_keepalive: %s is not a whole number of seconds between 0 and 65535", ka)
	}
	return nil
}

func validPrefix(p netip.Prefix) error {
	if !p.IsValid() {
		return errors.New("not a prefix")
	}
	if p.Addr().Zone() != "" {
		return fmt.Errorf("%s has a zone", p)
	}
	if m := p.Masked(); m != p {
		return fmt.Errorf("%s has host bits set (want %s)", p, m)
	}
	return nil
}

// validIfaceName applies the kernel's dev_valid_name rules.
func validIfaceName(name string) error {
	switch {
	case name == "":
		return errors.New("missing")
	case len(name) > 15:
		return fmt.Errorf("%q is longer than 15 bytes", name)
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a device name", name)
	case strings.ContainsAny(name, "/: \t\n\v\f\r\x00"):
		return fmt.Errorf("%q contains '/', ':', a space or a control character", name)
	}
	return nil
}
