package egress

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// TestIPSetEntryEncoding checks one entry against vishvananda/netlink's
// attribute encoder, an independent implementation of the same layout.
func TestIPSetEntryEncoding(t *testing.T) {
	for _, s := range []string{"240.0.0.0/4", "240.1.2.3/32", "250.0.0.128/25"} {
		p := netip.MustParsePrefix(s)
		a := p.Addr().As4()
		ip := nl.NewRtAttr(nl.IPSET_ATTR_IPADDR_IPV4|int(nl.NLA_F_NET_BYTEORDER), a[:])
		data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_IP|int(nl.NLA_F_NESTED), ip.Serialize()))
		data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_CIDR, nl.Uint8Attr(uint8(p.Bits()))))
		want := data.Serialize()
		got := appendIPSetEntry(nil, p)
		if string(got) != string(want) {
			t.Errorf("%s: encoded % x, want % x", s, got, want)
		}
		if len(got) != ipsetEntryBytes {
			t.Errorf("%s: %d bytes, ipsetEntryBytes is %d", s, len(got), ipsetEntryBytes)
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
		case ipsetAttrProtocol:
			if v[0] != ipsetProtocol {
				t.Errorf("protocol %d", v[0])
			}
		case ipsetAttrSetname:
			name = string(v[:len(v)-1])
		case ipsetAttrLineno:
			if len(v) != 4 {
				t.Errorf("lineno of %d bytes", len(v))
			}
		case ipsetAttrADT | nlaFNested:
			attrs(v, func(typ uint16, v []byte) {
				if typ != ipsetAttrData|nlaFNested {
					t.Fatalf("ADT child type %#x", typ)
				}
				var addr netip.Addr
				bits := -1
				attrs(v, func(typ uint16, v []byte) {
					switch typ {
					case ipsetAttrIP | nlaFNested:
						attrs(v, func(typ uint16, v []byte) {
							if typ != ipsetAttrIPv4|nlaFNetByteorder || len(v) != 4 {
								t.Fatalf("IP child %#x len %d", typ, len(v))
							}
							addr = netip.AddrFrom4([4]byte(v))
						})
					case ipsetAttrCIDR:
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

func TestIPSetADTRequests(t *testing.T) {
	cidrs, err := Generate(3, 10_000, DeniedAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ per, wantMsgs int }{
		{1, 10_000}, {2700, 4}, {10_000, 4} /* clamped to 2729 per message */, {3000, 4},
	} {
		reqs, err := ipsetADTRequests("cnb-egress", cidrs, tc.per)
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
		if _, err := ipsetADTRequests("s", []netip.Prefix{netip.MustParsePrefix(bad)}, 10); err == nil {
			t.Errorf("%s: no error", bad)
		}
		if _, err := ipsetOneRequest("s", netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("one %s: no error", bad)
		}
	}
	if _, err := ipsetADTRequests("s", cidrs, 0); err == nil {
		t.Error("0 per message: no error")
	}
}

func TestParseIPSetTypeReply(t *testing.T) {
	reply := nlAttr(nlAttr(nlAttr([]byte{2, 0, 0, 0}, ipsetAttrProtocol, []byte{6}),
		ipsetAttrTypename, cString("hash:net")), ipsetAttrRevision, []byte{7})
	reply = nlAttr(reply, 10, []byte{0}) // REVISION_MIN after it
	for _, tc := range []struct {
		name string
		in   []byte
		rev  uint8
		ok   bool
	}{
		{"reply", reply, 7, true},
		{"short", []byte{2, 0}, 0, false},
		{"no revision", nlAttr([]byte{2, 0, 0, 0}, ipsetAttrProtocol, []byte{6}), 0, false},
		{"bad length", append([]byte{2, 0, 0, 0}, 0xff, 0, 4, 0), 0, false},
		{"empty revision", nlAttr([]byte{2, 0, 0, 0}, ipsetAttrRevision, nil), 0, false},
	} {
		rev, err := parseIPSetTypeReply(tc.in)
		if (err == nil) != tc.ok || rev != tc.rev {
			t.Errorf("%s: %d, %v; want %d, ok=%v", tc.name, rev, err, tc.rev, tc.ok)
		}
	}
}

func FuzzParseIPSetTypeReply(f *testing.F) {
	f.Add(nlAttr(nlAttr([]byte{2, 0, 0, 0}, ipsetAttrProtocol, []byte{6}), ipsetAttrRevision, []byte{7}))
	f.Add([]byte{2, 0, 0, 0, 5, 0, 4, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseIPSetTypeReply(b)
	})
}

// ipsetADTRequests encodes, as ipsetConn.add does, adding cidrs to set
// name as requests of at most perMsg entries each (at most
// ipsetMaxPerMsg), for the tests to decode.
func ipsetADTRequests(name string, cidrs []netip.Prefix, perMsg int) ([][]byte, error) {
	if perMsg < 1 {
		return nil, fmt.Errorf("ipset requests: %d entries per message", perMsg)
	}
	perMsg = min(perMsg, ipsetMaxPerMsg)
	var out [][]byte
	for i := 0; i < len(cidrs); i += perMsg {
		b, err := appendIPSetADT(nil, name, cidrs[i:min(i+perMsg, len(cidrs))])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
