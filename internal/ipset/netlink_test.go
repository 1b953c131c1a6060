package ipset

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// TestEntryEncoding checks one entry against vishvananda/netlink's
// attribute encoder, an independent implementation of the same layout.
func TestEntryEncoding(t *testing.T) {
	for _, s := range []string{"240.0.0.0/4", "240.1.2.3/32", "250.0.0.128/25"} {
		p := netip.MustParsePrefix(s)
		a := p.Addr().As4()
		ip := nl.NewRtAttr(nl.IPSET_ATTR_IPADDR_IPV4|int(nl.NLA_F_NET_BYTEORDER), a[:])
		data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_IP|int(nl.NLA_F_NESTED), ip.Serialize()))
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_CIDR, nl.Uint8Attr(uint8(p.Bits()))))
		want := data.Serialize()
		got := appendEntry(nil, p)
		if string(got) != string(want) {
			t.Errorf("%s: encoded % x, want % x", s, got, want)
		}
		if len(got) != entryBytes {
			t.Errorf("%s: %d bytes, entryBytes is %d", s, len(got), entryBytes)
		}
	}
}

// decodeADT is a test decoder: the prefixes of one ADT request.
func decodeADT(t *testing.T, b []byte) (name string, out []netip.Prefix) {
	t.Helper()
	attrs := func(b []byte, f func(typ uint16, v []byte)) {
		for len(b) > 0 {
			if len(b) < 4 {
				t.Fatalf("truncated attribute header: % x", b)
			}
			l := int(binary.NativeEndian.Uint16(b))
			if l < 4 || l > len(b) {
				t.Fatalf("attribute length %d of %d", l, len(b))
			}
			f(binary.NativeEndian.Uint16(b[2:]), b[4:l])
			b = b[min((l+3)&^3, len(b)):]
		}
	}
	if b[0] != 2 || b[1] != 0 {
		t.Fatalf("nfgenmsg % x: want family AF_INET, version 0", b[:4])
	}
	attrs(b[4:], func(typ uint16, v []byte) {
		switch typ {
		case attrProtocol:
			if v[0] != protocol {
				t.Errorf("protocol %d", v[0])
			}
		case attrSetname:
			name = string(v[:len(v)-1])
		case attrLineno:
			if len(v) != 4 {
				t.Errorf("lineno of %d bytes", len(v))
			}
		case attrADT | nlaFNested:
			attrs(v, func(typ uint16, v []byte) {
				if typ != attrData|nlaFNested {
					t.Fatalf("ADT child type %#x", typ)
				}
				var addr netip.Addr
				bits := -1
				attrs(v, func(typ uint16, v []byte) {
					switch typ {
					case attrIP | nlaFNested:
						attrs(v, func(typ uint16, v []byte) {
							if typ != attrIPv4|nlaFNetByteorder || len(v) != 4 {
								t.Fatalf("IP child %#x len %d", typ, len(v))
							}
							addr = netip.AddrFrom4([4]byte(v))
						})
					case attrCIDR:
						bits = int(v[0])
					default:
						t.Fatalf("DATA child type %#x", typ)
					}
				})
				out = append(out, netip.PrefixFrom(addr, bits))
			})
		default:
			t.Fatalf("top-level attribute %#x", typ)
		}
	})
	return name, out
}

func TestADTRequests(t *testing.T) {
	cidrs := testPrefixes(10_000)
	for _, tc := range []struct{ per, wantMsgs int }{
		{1, 10_000}, {2700, 4}, {10_000, 4} /* clamped to 2729 per message */, {3000, 4},
	} {
		reqs, err := adtRequests("cnb-egress", cidrs, tc.per)
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) != tc.wantMsgs {
			t.Errorf("per %d: %d requests, want %d", tc.per, len(reqs), tc.wantMsgs)
		}
		var got []netip.Prefix
		for _, r := range reqs {
			name, ps := decodeADT(t, r)
			if name != "cnb-egress" {
				t.Fatalf("set name %q", name)
			}
			got = append(got, ps...)
		}
		if len(got) != len(cidrs) {
			t.Fatalf("per %d: %d prefixes back, want %d", tc.per, len(got), len(cidrs))
		}
		for i := range got {
			if got[i] != cidrs[i] {
				t.Fatalf("per %d: prefix %d is %v, want %v", tc.per, i, got[i], cidrs[i])
			}
		}
	}
	for _, bad := range []string{"2001:db8::/32", "240.0.0.1/24"} {
		if _, err := adtRequests("s", []netip.Prefix{netip.MustParsePrefix(bad)}, 10); err == nil {
			t.Errorf("%s: no error", bad)
		}
		if _, err := oneRequest("s", netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("one %s: no error", bad)
		}
	}
	if _, err := adtRequests("s", cidrs, 0); err == nil {
		t.Error("0 per message: no error")
	}
}

func TestParseTypeReply(t *testing.T) {
	reply := nlAttr(nlAttr(nlAttr([]byte{2, 0, 0, 0}, attrProtocol, []byte{6}),
		attrTypename, cString("hash:net")), attrRevision, []byte{7})
	reply = nlAttr(reply, 10, []byte{0}) // REVISION_MIN after it
	for _, tc := range []struct {
		name string
		in   []byte
		rev  uint8
		ok   bool
	}{
		{"reply", reply, 7, true},
		{"short", []byte{2, 0}, 0, false},
		{"no revision", nlAttr([]byte{2, 0, 0, 0}, attrProtocol, []byte{6}), 0, false},
		{"bad length", append([]byte{2, 0, 0, 0}, 0xff, 0, 4, 0), 0, false},
		{"empty revision", nlAttr([]byte{2, 0, 0, 0}, attrRevision, nil), 0, false},
	} {
		rev, err := parseTypeReply(tc.in)
		if (err == nil) != tc.ok || rev != tc.rev {
			t.Errorf("%s: %d, %v; want %d, ok=%v", tc.name, rev, err, tc.rev, tc.ok)
		}
	}
}

func FuzzParseTypeReply(f *testing.F) {
	f.Add(nlAttr(nlAttr([]byte{2, 0, 0, 0}, attrProtocol, []byte{6}), attrRevision, []byte{7}))
	f.Add([]byte{2, 0, 0, 0, 5, 0, 4, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseTypeReply(b)
	})
}

// adtRequests encodes, as Conn.add does, adding cidrs to set
// name as requests of at most perMsg entries each (at most
// maxPerMsg), for the tests to decode.
func adtRequests(name string, cidrs []netip.Prefix, perMsg int) ([][]byte, error) {
	if perMsg < 1 {
		return nil, fmt.Errorf("ipset requests: %d entries per message", perMsg)
	}
	perMsg = min(perMsg, maxPerMsg)
	var out [][]byte
	for i := 0; i < len(cidrs); i += perMsg {
		b, err := appendADT(nil, name, cidrs[i:min(i+perMsg, len(cidrs))])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// testPrefixes is n masked IPv4 prefixes of every length from /8 to /32
// inside 240.0.0.0/4 (the encoders need no distinct ones).
func testPrefixes(n int) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := range n {
		a := netip.AddrFrom4([4]byte{240 | byte(i>>16)&0x0f, byte(i >> 8), byte(i), byte(i * 7)})
		p, _ := a.Prefix(8 + i%25)
		out = append(out, p)
	}
	return out
}
