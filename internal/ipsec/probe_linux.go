package ipsec

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/nsrun"
)

// Why adding an ESP state fails, by errno (net/xfrm/xfrm_user.c and
// xfrm_state.c):
//   - EPROTONOSUPPORT ("Requested type not found"): no xfrm type for ESP,
//     i.e. CONFIG_INET_ESP is unset (or esp4 is an unloaded module).
//   - ENOSYS / ENOENT: the crypto API has no such algorithm (the attach_*
//     helpers run before the ESP type is looked up, so a missing
//     algorithm hides a missing ESP: ProbeKernel checks ESP separately).
//   - EPERM: not allowed (no CAP_NET_ADMIN), not a missing feature.

// ProbeKernel tells whether this kernel can run an ESP tunnel with alg: it
// adds one ESP state in a scratch network namespace (gone when it returns).
// It returns nil if it can, an error wrapping ErrNotSupported whose message
// says what is missing (ESP itself, or the algorithm in the kernel's crypto
// API) if it cannot, and another error if the probe itself failed (e.g. not
// root).
func ProbeKernel(alg Algorithm) error {
	if err := alg.Valid(); err != nil {
		return err
	}
	return nsrun.Scratch(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_XFRM)
		if err != nil {
			if errors.Is(err, unix.EPROTONOSUPPORT) {
				return fmt.Errorf("%w: kernel ESP: no XFRM netlink API (CONFIG_XFRM_USER unset): %v", ErrNotSupported, err)
			}
			return fmt.Errorf("xfrm netlink handle in a scratch netns: %w", err)
		}
		defer h.Close()
		return probeKernel(h, alg)
	})
}

// probeKernel does ProbeKernel's work through h, in a namespace of its own.
func probeKernel(h *netlink.Handle, alg Algorithm) error {
	err := addProbeState(h, alg, probeSPI)
	switch failureOf(err) {
	case noFailure:
		return nil
	case noESP:
		return classify(err, alg)
	case otherFailure:
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("probe kernel ESP: add an ESP state: %w (needs CAP_NET_ADMIN)", err)
		}
		return fmt.Errorf("probe kernel ESP with %s: %w", alg, err)
	}
	// The algorithm is missing, which hides whether ESP is: check it with
	// the other algorithm.
	for i, other := range Algorithms() {
		if other == alg {
			continue
		}
		switch oerr := addProbeState(h, other, probeSPI+1+uint32(i)); failureOf(oerr) {
		case noFailure:
			return fmt.Errorf("%w: kernel ESP works (with %s) but its crypto API has no %s (%v; /proc/crypto lists what it has)", ErrNotSupported, other, alg, err)
		case noESP:
			return fmt.Errorf("%w: kernel has no ESP (CONFIG_INET_ESP unset, or esp4 not loadable: adding an ESP state with %s fails: %v); its crypto API also lacks %s (%v)",
				ErrNotSupported, other, oerr, alg, err)
		}
	}
	return fmt.Errorf("%w (whether the kernel has ESP at all is unknown: no other algorithm to check it with)", classify(err, alg))
}

// failure is why adding an ESP state failed.
type failure int

const (
	noFailure    failure = iota
	noESP                // EPROTONOSUPPORT: no xfrm type for ESP
	noAlg                // ENOSYS, ENOENT: no such algorithm
	otherFailure         // anything else (EPERM, EEXIST, EINVAL, ...)
)

func failureOf(err error) failure {
	switch {
	case err == nil:
		return noFailure
	case errors.Is(err, unix.EPROTONOSUPPORT):
		return noESP
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOENT):
		return noAlg
	}
	return otherFailure
}

// classify wraps an error adding an ESP state with alg in ErrNotSupported
// with the reason when it means a missing feature, and returns it as is
// otherwise.
func classify(err error, alg Algorithm) error {
	switch failureOf(err) {
	case noESP:
		return fmt.Errorf("%w: kernel has no ESP (CONFIG_INET_ESP unset, or esp4 not loadable; %v)", ErrNotSupported, err)
	case noAlg:
		return fmt.Errorf("%w: the kernel's crypto API has no %s (%v; /proc/crypto lists what it has)", ErrNotSupported, alg, err)
	}
	return err
}

// probeSPI is the first SPI the probe uses (any valid one: the namespace is
// empty).
const probeSPI = 0x100

// addProbeState adds one outgoing ESP tunnel state with alg and throwaway
// keys between two documentation addresses.
func addProbeState(h *netlink.Handle, alg Algorithm, spi uint32) error {
	t := Tunnel{
		Local: netip.MustParseAddr("192.0.2.1"), Remote: netip.MustParseAddr("192.0.2.2"),
		SPIOut: spi, Alg: alg, KeyOut: make([]byte, KeyLen(alg)), KeyIn: make([]byte, KeyLen(alg)), ReqID: 1,
	}
	return h.XfrmStateAdd(States(t)[0])
}
