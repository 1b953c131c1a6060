package ipsec

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/testutil"
)

// Addresses of the privileged tests' node pair (their own namespaces).
var (
	testWires = [2]string{"198.18.211.1", "198.18.211.2"}
	testPods  = [2]string{"198.19.1.10", "198.19.2.10"}
)

// TestApplyUndo runs Apply in a fresh node namespace. Where the kernel has
// no ESP or no such algorithm, Apply must fail with ErrNotSupported and
// leave no state or policy behind; where it has them, it must install two
// states and three policies, and Remove must take them all away again.
func TestApplyUndo(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			p := newNodePair(t, testWires, testPods)
			tun := p.tunnel(t, alg)
			err := Apply(p.h[0], tun)
			if err != nil && !errors.Is(err, ErrNotSupported) {
				t.Fatalf("Apply: %v", err)
			}
			states, pols := xfrmCount(t, p.h[0])
			if err != nil {
				t.Logf("Apply: %v", err)
				if states+pols != 0 {
					t.Fatalf("failed Apply left %d states and %d policies", states, pols)
				}
				return
			}
			if states != 2 || pols != 3 {
				t.Fatalf("Apply installed %d states and %d policies, want 2 and 3", states, pols)
			}
			if err := Remove(p.h[0], tun); err != nil {
				t.Fatal(err)
			}
			if states, pols := xfrmCount(t, p.h[0]); states+pols != 0 {
				t.Fatalf("Remove left %d states and %d policies", states, pols)
			}
		})
	}
}

// TestRemoveOnlyOwn: Remove deletes the tunnel's policies (policies need
// no ESP, so this runs on any kernel with xfrm) and nothing else: another
// tunnel's policies in the same namespace survive, and missing states are
// not an error.
func TestRemoveOnlyOwn(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	p := newNodePair(t, testWires, testPods)
	ours := p.tunnel(t, AESGCM128)
	other := ours
	other.RemoteNet = netip.MustParsePrefix("198.19.3.0/24")
	for _, tun := range []Tunnel{ours, other} {
		for _, pol := range Policies(tun) {
			if err := p.h[0].XfrmPolicyAdd(pol); err != nil {
				t.Fatalf("add policy %v: %v", pol, err)
			}
		}
	}
	if err := Remove(p.h[0], ours); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	left, err := p.h[0].XfrmPolicyList(netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 {
		t.Fatalf("%d policies left, want the other tunnel's 3: %v", len(left), left)
	}
	for _, pol := range left {
		if pol.Src.String() != other.RemoteNet.String() && pol.Dst.String() != other.RemoteNet.String() {
			t.Errorf("policy %v left behind is not the other tunnel's", pol)
		}
	}
	if err := Remove(p.h[0], ours); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

// TestKernelTunnel sets up kernel ESP between two node namespaces and
// checks that pod traffic flows through it and that its payload is not in
// clear on the wire, while it is without the tunnel (negative control).
// It needs ESP and the algorithm in the kernel, and skips with
// ProbeKernel's reason otherwise.
func TestKernelTunnel(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			testutil.SkipIfNotSupported(t, ProbeKernel(alg), ErrNotSupported)
			p := newNodePair(t, testWires, testPods)
			p.podRoutes(t, true) // kernel ESP encrypts on the ordinary route

			clear := newMarker(t)
			c := startCapture(t, p.do(0), p.h[0], wireIf)
			p.sendUDP(t, clear)
			if st := analyse(c.stop(), clear); st.marker == 0 {
				t.Fatalf("negative control: the marker never showed in clear on %s (%d frames): the capture sees nothing", wireIf, st.total)
			}

			tun := p.tunnel(t, alg)
			for i, side := range []Tunnel{tun, tun.Mirror()} {
				if err := Apply(p.h[i], side); err != nil {
					t.Fatalf("node %d: %v", i, err)
				}
				t.Cleanup(func() {
					if err := Remove(p.h[i], side); err != nil {
						t.Errorf("node %d: %v", i, err)
					}
				})
			}
			secret := newMarker(t)
			c = startCapture(t, p.do(0), p.h[0], wireIf)
			p.sendUDP(t, secret)
			st := analyse(c.stop(), secret)
			t.Logf("%s through kernel ESP: %+v", alg, st)
			if st.marker != 0 {
				t.Fatalf("the marker crossed %s in clear %d times with the tunnel up", wireIf, st.marker)
			}
			if st.esp == 0 {
				t.Fatalf("no ESP packet on %s, yet the marker arrived", wireIf)
			}
			t.Logf("TCP through kernel ESP (%s): %.0f Mbit/s", alg, p.streamTCP(t, time.Second))
		})
	}
}

// xfrmCount counts the xfrm states and policies in h's namespace.
func xfrmCount(t *testing.T, h *netlink.Handle) (states, policies int) {
	t.Helper()
	st, err := h.XfrmStateList(netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := h.XfrmPolicyList(netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	return len(st), len(pol)
}
