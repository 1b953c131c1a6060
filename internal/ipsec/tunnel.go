package ipsec

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Tunnel is one node's side of an ESP tunnel between two nodes: what it
// sends to Remote (Out) and what it accepts from it (In). The peer
// configures Mirror() of it.
type Tunnel struct {
	// Local and Remote are the node (wire) addresses: the outer header's
	// source and destination of outgoing ESP packets.
	Local, Remote netip.Addr
	// LocalNet and RemoteNet are the pod CIDRs behind each node: traffic
	// from LocalNet to RemoteNet is encrypted, and traffic from RemoteNet
	// to LocalNet is only accepted if it arrived encrypted.
	LocalNet, RemoteNet netip.Prefix
	// SPIOut identifies the SA of packets sent to Remote, SPIIn the SA of
	// packets received from it (at least 256: 1-255 are reserved).
	SPIOut, SPIIn uint32
	Alg           Algorithm
	// KeyOut and KeyIn are each direction's key material, KeyLen(Alg)
	// bytes each (NewKeys); they must differ.
	KeyOut, KeyIn []byte
	// ReqID ties the policies' templates to the states (> 0).
	ReqID int
	// Mark and MarkMask, when MarkMask is not 0, restrict the outgoing
	// state and policy to packets whose mark matches (as Cilium marks the
	// packets its BPF programs want encrypted); incoming traffic is not
	// marked. Zero: every packet matching the selectors is encrypted.
	Mark, MarkMask uint32
}

// minSPI is the lowest SPI a tunnel may use: 1-255 are reserved by IANA
// (RFC 4303 §2.1) and 0 means "no SA".
const minSPI = 256

// NewTunnel returns Local's side of a new tunnel with alg, fresh random SPIs
// and keys and ReqID 1. The peer's side is its Mirror.
func NewTunnel(alg Algorithm, local, remote netip.Addr, localNet, remoteNet netip.Prefix) (Tunnel, error) {
	t := Tunnel{Local: local, Remote: remote, LocalNet: localNet, RemoteNet: remoteNet, Alg: alg, ReqID: 1}
	var err error
	if t.KeyOut, err = NewKeys(alg); err != nil {
		return Tunnel{}, err
	}
	if t.KeyIn, err = NewKeys(alg); err != nil {
		return Tunnel{}, err
	}
	if t.SPIOut, err = newSPI(); err != nil {
		return Tunnel{}, err
	}
	for t.SPIIn == 0 || t.SPIIn == t.SPIOut {
		if t.SPIIn, err = newSPI(); err != nil {
			return Tunnel{}, err
		}
	}
	return t, t.Validate()
}

// newSPI returns a random SPI of at least minSPI.
func newSPI() (uint32, error) {
	var b [4]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("read random SPI: %w", err)
		}
		if spi := binary.BigEndian.Uint32(b[:]); spi >= minSPI {
			return spi, nil
		}
	}
}

// Mirror returns the peer's side of the tunnel: addresses, networks, SPIs
// and keys swapped.
func (t Tunnel) Mirror() Tunnel {
	m := t
	m.Local, m.Remote = t.Remote, t.Local
	m.LocalNet, m.RemoteNet = t.RemoteNet, t.LocalNet
	m.SPIOut, m.SPIIn = t.SPIIn, t.SPIOut
	m.KeyOut, m.KeyIn = t.KeyIn, t.KeyOut
	return m
}

// Validate checks t: IPv4 only (the overhead arithmetic and the lab are
// IPv4), masked non-overlapping pod CIDRs, distinct SPIs of at least 256,
// keys of the right length that differ.
func (t Tunnel) Validate() error {
	var errs []error
	if err := t.Alg.Valid(); err != nil {
		errs = append(errs, err)
	}
	if !t.Local.Is4() || !t.Remote.Is4() || t.Local == t.Remote {
		errs = append(errs, fmt.Errorf("local %v and remote %v must be two different IPv4 addresses", t.Local, t.Remote))
	}
	for _, p := range []netip.Prefix{t.LocalNet, t.RemoteNet} {
		if !p.IsValid() || !p.Addr().Is4() || p.Masked() != p {
			errs = append(errs, fmt.Errorf("pod CIDR %v must be a masked IPv4 prefix", p))
		}
	}
	if t.LocalNet.IsValid() && t.RemoteNet.IsValid() && t.LocalNet.Overlaps(t.RemoteNet) {
		errs = append(errs, fmt.Errorf("pod CIDRs %v and %v overlap", t.LocalNet, t.RemoteNet))
	}
	if t.SPIOut < minSPI || t.SPIIn < minSPI || t.SPIOut == t.SPIIn {
		errs = append(errs, fmt.Errorf("SPIs out 0x%x and in 0x%x must differ and be at least 0x%x", t.SPIOut, t.SPIIn, minSPI))
	}
	if n := KeyLen(t.Alg); n > 0 && (len(t.KeyOut) != n || len(t.KeyIn) != n) {
		errs = append(errs, fmt.Errorf("keys of %d and %d bytes, %s needs %d", len(t.KeyOut), len(t.KeyIn), t.Alg, n))
	}
	if len(t.KeyOut) > 0 && bytes.Equal(t.KeyOut, t.KeyIn) {
		errs = append(errs, errors.New("the two directions share a key (a GCM nonce could repeat)"))
	}
	if t.ReqID <= 0 {
		errs = append(errs, fmt.Errorf("reqid %d, want > 0", t.ReqID))
	}
	if t.Mark&^t.MarkMask != 0 {
		errs = append(errs, fmt.Errorf("mark 0x%x has bits outside its mask 0x%x", t.Mark, t.MarkMask))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid tunnel %v->%v: %w", t.Local, t.Remote, err)
	}
	return nil
}
