package ipsec

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

// testTunnel is node1's side of the lab's tunnel (node wire addresses and
// pod CIDRs of internal/lab) with fixed SPIs and recognisable keys.
func testTunnel(alg Algorithm) Tunnel {
	key := func(base byte) []byte {
		k := make([]byte, KeyLen(alg))
		for i := range k {
			k[i] = base + byte(i)
		}
		return k
	}
	return Tunnel{
		Local: netip.MustParseAddr("198.18.0.1"), Remote: netip.MustParseAddr("198.18.0.2"),
		LocalNet: netip.MustParsePrefix("198.19.1.0/24"), RemoteNet: netip.MustParsePrefix("198.19.2.0/24"),
		SPIOut: 0x1001, SPIIn: 0x2002, Alg: alg, KeyOut: key(0x00), KeyIn: key(0x80), ReqID: 1,
	}
}

func TestNewTunnel(t *testing.T) {
	for _, alg := range Algorithms() {
		base := testTunnel(alg)
		tun, err := NewTunnel(alg, base.Local, base.Remote, base.LocalNet, base.RemoteNet)
		if err != nil {
			t.Fatal(err)
		}
		if tun.SPIOut < minSPI || tun.SPIIn < minSPI || tun.SPIOut == tun.SPIIn {
			t.Errorf("%s: SPIs 0x%x 0x%x", alg, tun.SPIOut, tun.SPIIn)
		}
		peer := tun.Mirror()
		if err := peer.Validate(); err != nil {
			t.Fatalf("mirror: %v", err)
		}
		if peer.Local != tun.Remote || peer.LocalNet != tun.RemoteNet || peer.SPIOut != tun.SPIIn ||
			!bytes.Equal(peer.KeyOut, tun.KeyIn) || !bytes.Equal(peer.KeyIn, tun.KeyOut) {
			t.Errorf("%s: mirror is not the peer's view: %+v", alg, peer)
		}
		if back := peer.Mirror(); back.Local != tun.Local || back.SPIOut != tun.SPIOut || !bytes.Equal(back.KeyOut, tun.KeyOut) {
			t.Errorf("%s: Mirror is not an involution", alg)
		}
	}
}

func TestTunnelValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Tunnel)
		want   string // "" = valid
	}{
		{"ok", func(*Tunnel) {}, ""},
		{"ok marked", func(t *Tunnel) { t.Mark, t.MarkMask = 0xe00, 0xf00 }, ""},
		{"unknown alg", func(t *Tunnel) { t.Alg = "cbc(des)" }, "unknown ESP algorithm"},
		{"ipv6", func(t *Tunnel) { t.Remote = netip.MustParseAddr("2001:db8::2") }, "IPv4"},
		{"same ends", func(t *Tunnel) { t.Remote = t.Local }, "two different"},
		{"unmasked", func(t *Tunnel) { t.LocalNet = netip.MustParsePrefix("198.19.1.1/24") }, "masked"},
		{"overlap", func(t *Tunnel) { t.RemoteNet = netip.MustParsePrefix("198.19.0.0/16") }, "overlap"},
		{"reserved spi", func(t *Tunnel) { t.SPIOut = 255 }, "SPIs"},
		{"same spi", func(t *Tunnel) { t.SPIIn = t.SPIOut }, "SPIs"},
		{"short key", func(t *Tunnel) { t.KeyOut = t.KeyOut[:16] }, "needs"},
		{"shared key", func(t *Tunnel) { t.KeyIn = t.KeyOut }, "share a key"},
		{"no reqid", func(t *Tunnel) { t.ReqID = 0 }, "reqid"},
		{"mark outside mask", func(t *Tunnel) { t.Mark, t.MarkMask = 0x1e00, 0xf00 }, "outside its mask"},
	} {
		for _, alg := range Algorithms() {
			t.Run(tc.name+"/"+alg.Label(), func(t *testing.T) {
				tun := testTunnel(alg)
				tc.change(&tun)
				err := tun.Validate()
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("Validate: %v", err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
				}
			})
		}
	}
}
