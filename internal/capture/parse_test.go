package capture

import (
	"encoding/binary"
	"testing"
)

// Frame builders for the tests: Ethernet, optional VLAN tags, IPv4 or IPv6
// (with extension headers), then a transport header of 20 bytes whose
// first four are the ports.

func ether(etherType uint16, vlans int) []byte {
	b := make([]byte, 12, 64)
	for i := 0; i < vlans; i++ {
		b = binary.BigEndian.AppendUint16(b, etherVLAN)
		b = binary.BigEndian.AppendUint16(b, uint16(100+i))
	}
	return binary.BigEndian.AppendUint16(b, etherType)
}

func ports(sport, dport uint16) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12] = 5 << 4 // a TCP header's data offset: 20 bytes
	return b
}

func ipv4(proto uint8, fragOff uint16, l4 []byte) []byte {
	h := make([]byte, 20)
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(h[6:], fragOff&0x1fff)
	h[8] = 64
	h[9] = proto
	return append(h, l4...)
}

// ipv6 builds an IPv6 header whose chain is exts (each an extension
// header type, 8 bytes long; a fragment header with fragOff) then proto.
func ipv6(proto uint8, exts []uint8, fragOff uint16, l4 []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	next := proto
	if len(exts) > 0 {
		next = exts[0]
	}
	h[6] = next
	h[7] = 64
	for i, e := range exts {
		n := proto
		if i+1 < len(exts) {
			n = exts[i+1]
		}
		x := make([]byte, 8)
		x[0] = n
		if e == ip6Fragment {
			binary.BigEndian.PutUint16(x[2:], fragOff<<3)
		}
		h = append(h, x...)
	}
	return append(h, l4...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestParseFrame(t *testing.T) {
	for _, c := range []struct {
		name  string
		frame []byte
		want  Frame
		key   string
	}{
		{"empty", nil, Frame{}, "short"},
		{"runt", make([]byte, 13), Frame{}, "short"},
		{"arp", cat(ether(etherARP, 0), make([]byte, 28)), Frame{EtherType: etherARP}, "arp"},
		{"lldp", ether(0x88cc, 0), Frame{EtherType: 0x88cc}, "eth/0x88cc"},
		{"ipv4 tcp", cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, ports(40000, 5201))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoTCP, HasPorts: true, SrcPort: 40000, DstPort: 5201}, "tcp"},
		{"ipv4 udp wireguard", cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(51820, 51820))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP, HasPorts: true, SrcPort: 51820, DstPort: 51820}, "udp/51820"},
		{"vxlan source port is ephemeral", cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(61234, 4789))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP, HasPorts: true, SrcPort: 61234, DstPort: 4789}, "udp/4789"},
		{"a reply from a tunnel port", cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(4500, 61234))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP, HasPorts: true, SrcPort: 4500, DstPort: 61234}, "udp/4500"},
		{"plain udp keeps the lower port", cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(50000, 40001))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP, HasPorts: true, SrcPort: 50000, DstPort: 40001}, "udp/40001"},
		{"udp cut before its ports", cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, nil), []byte{1, 2, 3}),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP}, "udp"},
		{"ipv4 esp", cat(ether(etherIPv4, 0), ipv4(protoESP, 0, make([]byte, 40))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoESP}, "esp"},
		{"ipv4 non-first fragment", cat(ether(etherIPv4, 0), ipv4(protoUDP, 185, ports(1, 2))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP, Fragment: true}, "udp/frag"},
		{"ipv4 first fragment has ports", cat(ether(etherIPv4, 0), func() []byte {
			h := ipv4(protoUDP, 0, ports(51820, 9))
			h[6] |= 0x20 // more fragments
			return h
		}()),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoUDP, HasPorts: true, SrcPort: 51820, DstPort: 9}, "udp/51820"},
		{"ipv4 with options", cat(ether(etherIPv4, 0), func() []byte {
			h := ipv4(protoTCP, 0, nil)
			h[0] = 0x46
			return append(h, append(make([]byte, 4), ports(7, 8)...)...)
		}()), Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoTCP, HasPorts: true, SrcPort: 7, DstPort: 8}, "tcp"},
		{"ipv4 bad ihl", cat(ether(etherIPv4, 0), func() []byte { h := ipv4(protoTCP, 0, nil); h[0] = 0x44; return h }()),
			Frame{EtherType: etherIPv4}, "ipv4/short"},
		{"ipv4 header cut", cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, nil)[:19]), Frame{EtherType: etherIPv4}, "ipv4/short"},
		{"wrong version", cat(ether(etherIPv4, 0), ipv6(protoTCP, nil, 0, nil)), Frame{EtherType: etherIPv4}, "ipv4/short"},
		{"vlan ipv4 gre", cat(ether(etherIPv4, 2), ipv4(protoGRE, 0, make([]byte, 8))),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: protoGRE}, "gre"},
		{"three vlan tags are too many", cat(ether(etherVLAN, 2), []byte{0, 1}, ipv4(protoTCP, 0, nil)),
			Frame{EtherType: etherVLAN}, "eth/0x8100"},
		{"ipv6 udp geneve", cat(ether(etherIPv6, 0), ipv6(protoUDP, nil, 0, ports(33333, 6081))),
			Frame{EtherType: etherIPv6, IPVersion: 6, Proto: protoUDP, HasPorts: true, SrcPort: 33333, DstPort: 6081}, "udp/6081"},
		{"ipv6 extension headers", cat(ether(etherIPv6, 0), ipv6(protoTCP, []uint8{ip6HopByHop, ip6Routing, ip6DestOpts, ip6Fragment}, 0, ports(1, 2))),
			Frame{EtherType: etherIPv6, IPVersion: 6, Proto: protoTCP, HasPorts: true, SrcPort: 1, DstPort: 2}, "tcp"},
		{"ipv6 non-first fragment", cat(ether(etherIPv6, 0), ipv6(protoUDP, []uint8{ip6Fragment}, 100, ports(1, 2))),
			Frame{EtherType: etherIPv6, IPVersion: 6, Proto: protoUDP, Fragment: true}, "udp/frag"},
		{"ipv6 esp after options", cat(ether(etherIPv6, 0), ipv6(protoESP, []uint8{ip6DestOpts}, 0, make([]byte, 16))),
			Frame{EtherType: etherIPv6, IPVersion: 6, Proto: protoESP}, "esp"},
		{"ipv6 extension header cut", cat(ether(etherIPv6, 0), ipv6(protoTCP, []uint8{ip6HopByHop}, 0, nil)[:41]),
			Frame{EtherType: etherIPv6, IPVersion: 6, Proto: ip6HopByHop}, "ip/0"},
		{"ipv6 icmpv6", cat(ether(etherIPv6, 0), ipv6(protoICMPv6, nil, 0, make([]byte, 8))),
			Frame{EtherType: etherIPv6, IPVersion: 6, Proto: protoICMPv6}, "icmpv6"},
		{"ipv4 unnamed protocol", cat(ether(etherIPv4, 0), ipv4(253, 0, nil)),
			Frame{EtherType: etherIPv4, IPVersion: 4, Proto: 253}, "ip/253"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ParseFrame(c.frame)
			got.L3, got.Payload = 0, 0 // TestParseFrameOffsets
			if got != c.want {
				t.Errorf("ParseFrame = %+v, want %+v", got, c.want)
			}
			if k := got.Key(); k != c.key {
				t.Errorf("Key = %q, want %q", k, c.key)
			}
		})
	}
}

func TestParseFrameOffsets(t *testing.T) {
	tcpOpts := ports(1, 2)
	tcpOpts[12] = 8 << 4 // 32 bytes: timestamps
	tcpOpts = append(tcpOpts, make([]byte, 12)...)
	for _, c := range []struct {
		name        string
		frame       []byte
		l3, payload int
	}{
		{"ipv4 tcp", cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, ports(1, 2))), 14, 54},
		{"ipv4 tcp with options", cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, tcpOpts)), 14, 66},
		{"tcp options cut", cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, tcpOpts))[:60], 14, 0},
		{"tcp data offset too small", cat(ether(etherIPv4, 0), ipv4(protoTCP, 0, make([]byte, 20))), 14, 0},
		{"vlan ipv4 udp", cat(ether(etherIPv4, 1), ipv4(protoUDP, 0, ports(1, 2))), 18, 46},
		{"udp header cut", cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(1, 2)))[:40], 14, 0},
		{"ipv6 udp after an extension", cat(ether(etherIPv6, 0), ipv6(protoUDP, []uint8{ip6DestOpts}, 0, ports(1, 2))), 14, 70},
		{"esp", cat(ether(etherIPv4, 0), ipv4(protoESP, 0, make([]byte, 40))), 14, 0},
		{"arp", cat(ether(etherARP, 0), make([]byte, 28)), 0, 0},
	} {
		f := ParseFrame(c.frame)
		if f.L3 != c.l3 || f.Payload != c.payload {
			t.Errorf("%s: L3 %d, Payload %d; want %d, %d", c.name, f.L3, f.Payload, c.l3, c.payload)
		}
	}
}

func TestKeyPrefersEncProtoPorts(t *testing.T) {
	f := ParseFrame(cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(61000, 40000))))
	if k := f.key(preferredPorts([]string{"udp/61000"})).String(); k != "udp/61000" {
		t.Errorf("key with udp/61000 expected = %q, want udp/61000", k)
	}
	if k := f.key(preferredPorts(nil)).String(); k != "udp/40000" {
		t.Errorf("key = %q, want udp/40000", k)
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add(cat(ether(etherIPv4, 0), ipv4(protoUDP, 0, ports(51820, 51820))))
	f.Add(cat(ether(etherIPv4, 1), ipv4(protoESP, 0, make([]byte, 16))))
	f.Add(cat(ether(etherIPv4, 0), ipv4(protoTCP, 3, ports(1, 2))))
	f.Add(cat(ether(etherIPv6, 2), ipv6(protoUDP, []uint8{ip6HopByHop, ip6Fragment}, 0, ports(1, 4789))))
	f.Add(cat(ether(etherIPv6, 0), ipv6(protoTCP, []uint8{ip6Routing}, 0, nil)[:50]))
	f.Add(cat(ether(etherARP, 0), make([]byte, 28)))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := ParseFrame(b)
		if got != ParseFrame(append([]byte(nil), b...)) {
			t.Fatal("ParseFrame is not deterministic")
		}
		if got.IPVersion != 0 && got.IPVersion != 4 && got.IPVersion != 6 {
			t.Fatalf("IP version %d", got.IPVersion)
		}
		if got.IPVersion != 0 && got.EtherType != etherIPv4 && got.EtherType != etherIPv6 {
			t.Fatalf("IP version %d in a frame of ether type %#04x", got.IPVersion, got.EtherType)
		}
		if got.HasPorts {
			switch {
			case got.IPVersion == 0, got.Fragment:
				t.Fatalf("ports without a transport header: %+v", got)
			case got.Proto != protoTCP && got.Proto != protoUDP && got.Proto != protoUDPLite && got.Proto != protoSCTP:
				t.Fatalf("ports of protocol %d", got.Proto)
			}
		}
		if got.Fragment && got.IPVersion == 0 {
			t.Fatalf("a fragment outside IP: %+v", got)
		}
		if got.Payload > len(b) || got.Payload != 0 && (!got.HasPorts || got.Payload <= got.L3) ||
			(got.L3 != 0) != (got.IPVersion != 0) {
			t.Fatalf("offsets L3 %d, Payload %d in %d bytes: %+v", got.L3, got.Payload, len(b), got)
		}
		if got.Key() == "" {
			t.Fatalf("empty key for %+v", got)
		}
		// A frame cut shorter never yields more than the whole one.
		if len(b) > 0 {
			cut := ParseFrame(b[:len(b)-1])
			if cut.HasPorts && !got.HasPorts || cut.IPVersion != 0 && got.IPVersion == 0 {
				t.Fatalf("the frame cut by one byte parses further: %+v vs %+v", cut, got)
			}
		}
	})
}
