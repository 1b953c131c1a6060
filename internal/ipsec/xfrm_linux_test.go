package ipsec

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestStates(t *testing.T) {
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			tun := testTunnel(alg)
			st := States(tun)
			if len(st) != 2 {
				t.Fatalf("%d states, want out and in", len(st))
			}
			for i, want := range []struct {
				src, dst string
				spi      uint32
				key      []byte
				replay   int
			}{
				{"198.18.0.1", "198.18.0.2", tun.SPIOut, tun.KeyOut, 0},
				{"198.18.0.2", "198.18.0.1", tun.SPIIn, tun.KeyIn, replayWindow},
			} {
				s := st[i]
				if s.Src.String() != want.src || s.Dst.String() != want.dst || uint32(s.Spi) != want.spi {
					t.Errorf("state %d: %s->%s spi 0x%x, want %s->%s spi 0x%x", i, s.Src, s.Dst, s.Spi, want.src, want.dst, want.spi)
				}
				if s.Proto != netlink.XFRM_PROTO_ESP || s.Mode != netlink.XFRM_MODE_TUNNEL || s.Reqid != tun.ReqID {
					t.Errorf("state %d: proto %v mode %v reqid %d, want ESP tunnel reqid %d", i, s.Proto, s.Mode, s.Reqid, tun.ReqID)
				}
				if s.ReplayWindow != want.replay {
					t.Errorf("state %d: replay window %d, want %d", i, s.ReplayWindow, want.replay)
				}
				if s.Mark != nil {
					t.Errorf("state %d: marked %v without a mark in the tunnel", i, s.Mark)
				}
				checkAlgo(t, i, s, alg, want.key)
			}
		})
	}
}

// checkAlgo checks a state's algorithms and keys against alg and key.
func checkAlgo(t *testing.T, i int, s *netlink.XfrmState, alg Algorithm, key []byte) {
	t.Helper()
	switch alg {
	case AESGCM128:
		if s.Aead == nil || s.Crypt != nil || s.Auth != nil {
			t.Fatalf("state %d: GCM must be a lone AEAD: aead %v crypt %v auth %v", i, s.Aead, s.Crypt, s.Auth)
		}
		// 160 bits: the 128-bit key, then the 32-bit salt.
		if s.Aead.Name != "rfc4106(gcm(aes))" || len(s.Aead.Key) != 20 || s.Aead.ICVLen != 128 || !bytes.Equal(s.Aead.Key, key) {
			t.Errorf("state %d: aead %v", i, s.Aead)
		}
	case AESCBCHMACSHA256:
		if s.Aead != nil || s.Crypt == nil || s.Auth == nil {
			t.Fatalf("state %d: CBC needs crypt and auth: aead %v crypt %v auth %v", i, s.Aead, s.Crypt, s.Auth)
		}
		if s.Crypt.Name != "cbc(aes)" || !bytes.Equal(s.Crypt.Key, key[:16]) {
			t.Errorf("state %d: crypt %v", i, s.Crypt)
		}
		if s.Auth.Name != "hmac(sha256)" || s.Auth.TruncateLen != 128 || !bytes.Equal(s.Auth.Key, key[16:]) || len(s.Auth.Key) != 32 {
			t.Errorf("state %d: auth %v", i, s.Auth)
		}
	}
}

func TestPolicies(t *testing.T) {
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			tun := testTunnel(alg)
			pols := Policies(tun)
			if len(pols) != 3 {
				t.Fatalf("%d policies, want out, in and fwd", len(pols))
			}
			for i, want := range []struct {
				dir              netlink.Dir
				src, dst         string // selector
				tmplSrc, tmplDst string
			}{
				{netlink.XFRM_DIR_OUT, "198.19.1.0/24", "198.19.2.0/24", "198.18.0.1", "198.18.0.2"},
				{netlink.XFRM_DIR_IN, "198.19.2.0/24", "198.19.1.0/24", "198.18.0.2", "198.18.0.1"},
				{netlink.XFRM_DIR_FWD, "198.19.2.0/24", "198.19.1.0/24", "198.18.0.2", "198.18.0.1"},
			} {
				p := pols[i]
				if p.Dir != want.dir || p.Src.String() != want.src || p.Dst.String() != want.dst {
					t.Errorf("policy %d: %v %v->%v, want %v %s->%s", i, p.Dir, p.Src, p.Dst, want.dir, want.src, want.dst)
				}
				if p.Action != netlink.XFRM_POLICY_ALLOW || p.Proto != 0 || p.Mark != nil {
					t.Errorf("policy %d: action %v proto %v mark %v, want allow, any protocol, no mark", i, p.Action, p.Proto, p.Mark)
				}
				if len(p.Tmpls) != 1 {
					t.Fatalf("policy %d: %d templates, want 1", i, len(p.Tmpls))
				}
				tm := p.Tmpls[0]
				if tm.Src.String() != want.tmplSrc || tm.Dst.String() != want.tmplDst || tm.Proto != netlink.XFRM_PROTO_ESP ||
					tm.Mode != netlink.XFRM_MODE_TUNNEL || tm.Reqid != tun.ReqID || tm.Spi != 0 || tm.Optional != 0 {
					t.Errorf("policy %d: template %v, want ESP tunnel %s->%s reqid %d, any SPI, required", i, tm, want.tmplSrc, want.tmplDst, tun.ReqID)
				}
			}
		})
	}
}

// TestMarkOnlyOut: a mark restricts what is encrypted; it must not be put
// on the incoming state or policies, which match ESP from the wire.
func TestMarkOnlyOut(t *testing.T) {
	tun := testTunnel(AESGCM128)
	tun.Mark, tun.MarkMask = 0xe00, 0xf00
	st, pols := States(tun), Policies(tun)
	want := netlink.XfrmMark{Value: 0xe00, Mask: 0xf00}
	if st[0].Mark == nil || *st[0].Mark != want || pols[0].Mark == nil || *pols[0].Mark != want {
		t.Errorf("outgoing state/policy marks %v %v, want %v", st[0].Mark, pols[0].Mark, want)
	}
	if st[1].Mark != nil || pols[1].Mark != nil || pols[2].Mark != nil {
		t.Errorf("incoming state or in/fwd policy marked: %v %v %v", st[1].Mark, pols[1].Mark, pols[2].Mark)
	}
}

// TestMirrorPairs: each node's outgoing state is the other's incoming one
// (same addresses, SPI and key), and each out policy's selector is the
// peer's in and fwd selector.
func TestMirrorPairs(t *testing.T) {
	for _, alg := range Algorithms() {
		a := testTunnel(alg)
		b := a.Mirror()
		sa, sb := States(a), States(b)
		for i, pair := range [][2]*netlink.XfrmState{{sa[0], sb[1]}, {sb[0], sa[1]}} {
			o, in := pair[0], pair[1]
			if !o.Src.Equal(in.Src) || !o.Dst.Equal(in.Dst) || o.Spi != in.Spi || render(o) != strings.Replace(render(in), fmt.Sprintf("replay-window %d", replayWindow), "replay-window 0", 1) {
				t.Errorf("%s pair %d: out %s\nis not the peer's in %s", alg, i, render(o), render(in))
			}
		}
		pa, pb := Policies(a), Policies(b)
		if pa[0].Src.String() != pb[1].Src.String() || pa[0].Dst.String() != pb[2].Dst.String() {
			t.Errorf("%s: out selector %v->%v is not the peer's in/fwd selector", alg, pa[0].Src, pa[0].Dst)
		}
	}
}

// TestXfrmGolden renders both nodes' states and policies for each algorithm
// the way `ip xfrm` shows them and compares them with testdata.
func TestXfrmGolden(t *testing.T) {
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			var b strings.Builder
			node1 := testTunnel(alg)
			for _, side := range []struct {
				name string
				tun  Tunnel
			}{{"node1", node1}, {"node2", node1.Mirror()}} {
				fmt.Fprintf(&b, "# %s: %s (pods %s) <-> %s (pods %s), %s\n", side.name,
					side.tun.Local, side.tun.LocalNet, side.tun.Remote, side.tun.RemoteNet, alg)
				for _, s := range States(side.tun) {
					b.WriteString(render(s))
				}
				for _, p := range Policies(side.tun) {
					b.WriteString(renderPolicy(p))
				}
			}
			golden := filepath.Join("testdata", "xfrm-"+alg.Label()+".golden")
			compareGolden(t, golden, []byte(b.String()))
		})
	}
}

// render shows a state like `ip xfrm state` (netlink's own String
// dereferences fields States leaves nil).
func render(s *netlink.XfrmState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "src %s dst %s\n\tproto %s spi 0x%08x reqid %d mode %s\n\treplay-window %d\n",
		s.Src, s.Dst, s.Proto, s.Spi, s.Reqid, s.Mode, s.ReplayWindow)
	if s.Mark != nil {
		fmt.Fprintf(&b, "\tmark 0x%x/0x%x\n", s.Mark.Value, s.Mark.Mask)
	}
	if a := s.Auth; a != nil {
		fmt.Fprintf(&b, "\tauth-trunc %s 0x%x %d\n", a.Name, a.Key, a.TruncateLen)
	}
	if a := s.Crypt; a != nil {
		fmt.Fprintf(&b, "\tenc %s 0x%x\n", a.Name, a.Key)
	}
	if a := s.Aead; a != nil {
		fmt.Fprintf(&b, "\taead %s 0x%x %d\n", a.Name, a.Key, a.ICVLen)
	}
	return b.String()
}

// renderPolicy shows a policy like `ip xfrm policy`.
func renderPolicy(p *netlink.XfrmPolicy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "src %s dst %s\n\t%s priority %d\n", p.Src, p.Dst, p.Dir, p.Priority)
	if p.Mark != nil {
		fmt.Fprintf(&b, "\tmark 0x%x/0x%x\n", p.Mark.Value, p.Mark.Mask)
	}
	for _, tm := range p.Tmpls {
		fmt.Fprintf(&b, "\ttmpl src %s dst %s\n\t\tproto %s spi 0x%08x reqid %d mode %s\n",
			net.IP(tm.Src), net.IP(tm.Dst), tm.Proto, tm.Spi, tm.Reqid, tm.Mode)
	}
	return b.String()
}
