package capture

import (
	"fmt"
	"net/netip"
	"strings"
)

// Filter selects the frames that count towards a capture's Matched
// figures: IP packets whose outermost header goes between the two
// addresses of one of Pairs, in either direction. Between two pods it
// matches their traffic in clear (no tunnel, or none that hides their
// addresses); between two nodes, everything the nodes exchange,
// encapsulated pod traffic included. The zero Filter matches nothing and
// leaves Matched at 0.
type Filter struct {
	Pairs []AddrPair
}

// AddrPair is two addresses (IPv4-mapped IPv6 addresses are taken as
// IPv4).
type AddrPair [2]netip.Addr

// ParseAddrPair reads "A,B", two IP addresses.
func ParseAddrPair(s string) (AddrPair, error) {
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return AddrPair{}, fmt.Errorf("%q: want two IP addresses separated by a comma, e.g. 10.0.0.1,10.0.0.2", s)
	}
	var p AddrPair
	for i, x := range []string{a, b} {
		ip, err := netip.ParseAddr(strings.TrimSpace(x))
		if err != nil {
			return AddrPair{}, fmt.Errorf("%q: %q is not an IP address, e.g. 10.0.0.1,10.0.0.2", s, x)
		}
		p[i] = ip.Unmap().WithZone("")
	}
	if p[0] == p[1] {
		return AddrPair{}, fmt.Errorf("%q: the two addresses are the same; want the two ends of the traffic", s)
	}
	return p, nil
}

// String is "A,B" (ParseAddrPair's form).
func (p AddrPair) String() string { return p[0].String() + "," + p[1].String() }

// Empty tells whether f has no pair.
func (f Filter) Empty() bool { return len(f.Pairs) == 0 }

// Match tells whether a packet from src to dst is between the two
// addresses of one of f's pairs.
func (f Filter) Match(src, dst netip.Addr) bool {
	src, dst = src.Unmap(), dst.Unmap()
	for _, p := range f.Pairs {
		if (src == p[0] && dst == p[1]) || (src == p[1] && dst == p[0]) {
			return true
		}
	}
	return false
}

// String lists the pairs: "10.0.0.1<->10.0.0.2, 10.244.1.5<->10.244.2.7"
// ("" for the zero Filter).
func (f Filter) String() string {
	parts := make([]string, len(f.Pairs))
	for i, p := range f.Pairs {
		parts[i] = p[0].String() + "<->" + p[1].String()
	}
	return strings.Join(parts, ", ")
}

// MatchFrame tells whether the outermost IP header of frame b, as
// ParseFrame read it into fr, matches f.
func (f Filter) MatchFrame(b []byte, fr Frame) bool {
	if f.Empty() {
		return false
	}
	src, dst, ok := frameAddrs(b, fr)
	return ok && f.Match(src, dst)
}

// frameAddrs are the source and destination of the IP header at fr.L3.
func frameAddrs(b []byte, fr Frame) (src, dst netip.Addr, ok bool) {
	switch fr.IPVersion {
	case 4:
		if len(b) < fr.L3+20 {
			return src, dst, false
		}
		return netip.AddrFrom4([4]byte(b[fr.L3+12 : fr.L3+16])), netip.AddrFrom4([4]byte(b[fr.L3+16 : fr.L3+20])), true
	case 6:
		if len(b) < fr.L3+40 {
			return src, dst, false
		}
		return netip.AddrFrom16([16]byte(b[fr.L3+8 : fr.L3+24])), netip.AddrFrom16([16]byte(b[fr.L3+24 : fr.L3+40])), true
	}
	return src, dst, false
}
