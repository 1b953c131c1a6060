package capture

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

// withAddrs sets the source and destination of the IP header of frame b
// (as built by ether+ipv4/ipv6) and returns b.
func withAddrs(b []byte, src, dst string) []byte {
	f := ParseFrame(b)
	s, d := netip.MustParseAddr(src), netip.MustParseAddr(dst)
	if f.IPVersion == 4 {
		s4, d4 := s.As4(), d.As4()
		copy(b[f.L3+12:], s4[:])
		copy(b[f.L3+16:], d4[:])
	} else {
		s16, d16 := s.As16(), d.As16()
		copy(b[f.L3+8:], s16[:])
		copy(b[f.L3+24:], d16[:])
	}
	return b
}

func TestParseAddrPair(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{in: "10.0.0.1,10.0.0.2", want: "10.0.0.1,10.0.0.2"},
		{in: " fd00::1 , ::ffff:10.0.0.2", want: "fd00::1,10.0.0.2"},
		{in: "10.0.0.1", err: "want two IP addresses separated by a comma"},
		{in: "10.0.0.1,node-b", err: `"node-b" is not an IP address`},
		{in: "10.0.0.1,10.0.0.1", err: "the two addresses are the same"},
	} {
		p, err := ParseAddrPair(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || p.String() != tt.want {
			t.Errorf("%q: got %v, %v; want %s", tt.in, p, err, tt.want)
		}
	}
}

// TestTallyFilter: a table of synthetic frames on a server node's
// interface, the filter being the run's two pods and two nodes.
func TestTallyFilter(t *testing.T) {
	marker := []byte("cnibench:test-marker:0123456789")
	const (
		podA, podB   = "10.244.1.5", "10.244.2.7"
		nodeA, nodeB = "192.168.1.10", "192.168.1.11"
		other        = "192.168.1.12"
	)
	filter := Filter{Pairs: []AddrPair{
		{netip.MustParseAddr(podA), netip.MustParseAddr(podB)},
		{netip.MustParseAddr(nodeA), netip.MustParseAddr(nodeB)},
	}}
	tcpClear := func(src, dst string) []byte {
		return withAddrs(cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, ports(40000, 5201)), marker), src, dst)
	}
	vxlan := func(src, dst string, inner []byte) []byte {
		return withAddrs(cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(40000, 8472)), make([]byte, 8), inner), src, dst)
	}
	wg := func(src, dst string) []byte {
		return withAddrs(cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(51820, 51820)), bytes.Repeat([]byte{0xa5}, 200)), src, dst)
	}
	tests := []struct {
		name          string
		frame         []byte
		match, marker bool
	}{
		{"pods in clear", tcpClear(podA, podB), true, true},
		{"pods in clear, reply", tcpClear(podB, podA), true, true},
		{"pods encapsulated between the nodes", vxlan(nodeA, nodeB, tcpClear(podA, podB)), true, true},
		{"wireguard between the nodes", wg(nodeB, nodeA), true, false},
		{"another workload's clear traffic", tcpClear("10.244.1.9", podB), false, true},
		{"another node's tunnel", vxlan(other, nodeB, tcpClear("10.244.3.2", "10.244.2.8")), false, true},
		{"a pod to a node", tcpClear(podA, nodeB), false, true},
		{"ipv6 pods", withAddrs(cat(ether(etherIPv6, 0), ipv6(protoTCP, nil, 0, ports(1, 2)), marker), "fd00::1", "fd00::2"), false, true},
		{"arp", cat(ether(etherARP, 0), make([]byte, 28)), false, false},
		{"cut short", tcpClear(podA, podB)[:ethHeader+10], false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTally([][]byte{marker}, nil)
			tl.filter = filter
			tl.add(tt.frame, uint32(len(tt.frame)), false)
			var r Result
			tl.fill(&r)
			if r.Frames != 1 {
				t.Fatalf("frames %d", r.Frames)
			}
			if got := r.Matched == 1; got != tt.match {
				t.Errorf("matched %d, want match %v", r.Matched, tt.match)
			}
			wantMarker := uint64(0)
			if tt.match && tt.marker {
				wantMarker = 1
			}
			if r.MatchedMarker != wantMarker {
				t.Errorf("matched marker %d, want %d", r.MatchedMarker, wantMarker)
			}
			if r.Filter != "10.244.1.5<->10.244.2.7, 192.168.1.10<->192.168.1.11" {
				t.Errorf("filter %q", r.Filter)
			}
		})
	}
	// Without a filter nothing is matched and nothing is said.
	tl := newTally([][]byte{marker}, nil)
	tl.add(tcpClear(podA, podB), 100, false)
	var r Result
	tl.fill(&r)
	if r.Matched != 0 || r.Filter != "" || r.MatchedByProto != nil || r.MarkerFrames != 1 {
		t.Errorf("unfiltered: %+v", r)
	}
}

func TestFilterIPv6(t *testing.T) {
	f := Filter{Pairs: []AddrPair{{netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")}}}
	b := withAddrs(cat(ether(etherIPv6, 1), ipv6(protoUDP, []uint8{ip6HopByHop}, 0, ports(1, 2))), "fd00::2", "fd00::1")
	if !f.MatchFrame(b, ParseFrame(b)) {
		t.Error("an IPv6 frame behind a VLAN tag and an extension header did not match")
	}
	if (Filter{}).MatchFrame(b, ParseFrame(b)) {
		t.Error("the zero filter matched")
	}
}
