package ipsec

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/testutil"
)

func TestProbeUserspace(t *testing.T) {
	err := ProbeUserspace()
	t.Logf("ProbeUserspace() = %v", err)
	if err != nil && (!errors.Is(err, ErrNotSupported) || err == ErrNotSupported) {
		t.Fatalf("want nil or a wrapped ErrNotSupported with a reason, got %v", err)
	}
}

// skipUnlessUserspace skips (fails with CI=true, where the packages must be
// installed) when strongSwan's userspace ESP is not available.
func skipUnlessUserspace(t *testing.T) {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	if err := ProbeUserspace(); err != nil {
		if testutil.InCI() {
			t.Fatalf("CI=true: %v", err)
		}
		testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	}
}

// TestUserspaceTunnel runs strongSwan's userspace ESP (kernel-libipsec)
// between two node namespaces for each algorithm: pod traffic flows, its
// payload is absent in clear on the wire while ESP-in-UDP packets cross it,
// and the same traffic without the tunnel is seen in clear (negative
// control). Afterwards no charon runs in the namespaces and no directory is
// left behind.
func TestUserspaceTunnel(t *testing.T) {
	skipUnlessUserspace(t)
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			before := tempDirs(t)
			p := newNodePair(t, testWires, testPods)

			p.podRoutes(t, true)
			clearOnWire(t, p)
			// charon routes the pod CIDRs into its TUN device (table
			// 220); without the plain routes nothing can bypass it.
			p.podRoutes(t, false)

			checkUserspaceTunnel(t, p, alg, before)
		})
	}
}

// TestUserspaceTunnelRouted is TestUserspaceTunnel in the lab's layout
// (newRoutedPair), the one the encryption scenario runs in: pods in their
// own namespaces behind proxy-ARP veths, the other node's pod CIDR already
// routed via the wire (and left so), both sides started at once, and —
// what broke it — no node address inside its own pod CIDR. charon's
// kernel-libipsec then found no source for its route into ipsec0, failed
// to install the CHILD_SA's policies and answered TS_UNACCEPTABLE to every
// CREATE_CHILD_SA; StartUserspace must give the node such an address for
// the tunnel's lifetime and take it away again. Once stopped, pod traffic
// takes the plain route again, in clear.
func TestUserspaceTunnelRouted(t *testing.T) {
	skipUnlessUserspace(t)
	for _, alg := range Algorithms() {
		t.Run(alg.Label(), func(t *testing.T) {
			before := tempDirs(t)
			p := newRoutedPair(t, testWires, testPods)
			for i := range 2 {
				if a := addrsIn(t, p.h[i], p.podNet[i]); len(a) > 0 {
					t.Fatalf("node %d: the routed layout must have no address in %v, has %v", i, p.podNet[i], a)
				}
			}
			clearOnWire(t, p)
			checkUserspaceTunnel(t, p, alg, before)
			for i := range 2 {
				if a := addrsIn(t, p.h[i], p.podNet[i]); len(a) > 0 {
					t.Errorf("node %d: address %v left behind in %v", i, a, p.podNet[i])
				}
			}
			clearOnWire(t, p)
		})
	}
}

// clearOnWire sends a marker between the pods without a tunnel and checks
// that it crosses the wire in clear (the negative control).
func clearOnWire(t *testing.T, p *nodePair) {
	t.Helper()
	marker := newMarker(t)
	c := startCapture(t, p.do(0), p.h[0], wireIf)
	p.sendUDP(t, marker)
	if st := analyse(c.stop(), marker); st.marker == 0 {
		t.Fatalf("negative control: the marker never showed in clear on %s (%d frames)", wireIf, st.total)
	}
}

// checkUserspaceTunnel starts the tunnel on both nodes at once, checks that
// pod traffic goes through it encrypted (UDP, then a TCP stream), stops it
// and checks that nothing is left: no process in the namespaces, no TUN
// device, no routing rule, no directory that was not in before.
func checkUserspaceTunnel(t *testing.T, p *nodePair, alg Algorithm, before []string) {
	t.Helper()
	stops := startUserspacePair(t, p, alg)
	secret := newMarker(t)
	c := startCapture(t, p.do(0), p.h[0], wireIf)
	p.sendUDP(t, secret)
	st := analyse(c.stop(), secret)
	t.Logf("%s through userspace ESP: %+v", alg, st)
	if st.marker != 0 {
		t.Fatalf("the marker crossed %s in clear %d times with the tunnel up", wireIf, st.marker)
	}
	if st.espInUDP == 0 {
		t.Fatalf("no ESP-in-UDP packet on %s, yet the marker arrived", wireIf)
	}
	t.Logf("TCP through userspace ESP (%s): %.0f Mbit/s", alg, p.streamTCP(t, 2*time.Second))

	for i, stop := range stops {
		if err := stop(); err != nil {
			t.Errorf("node %d: stop: %v", i, err)
		}
		if pids := procsInNS(t, int(p.ns[i])); len(pids) > 0 {
			t.Errorf("node %d: processes %v still run in the namespace", i, pids)
		}
		if _, err := p.h[i].LinkByName(tunInterface); err == nil {
			t.Errorf("node %d: %s still there", i, tunInterface)
		}
		if rules, err := p.h[i].RuleList(netlink.FAMILY_V4); err != nil {
			t.Error(err)
		} else {
			for _, r := range rules {
				if r.Table == charonRouteTable {
					t.Errorf("node %d: charon's routing rule left behind: %v", i, r)
				}
			}
		}
	}
	if after := tempDirs(t); len(after) > len(before) {
		t.Errorf("left behind: %v (before: %v)", after, before)
	}
}

// addrsIn lists h's IPv4 addresses inside n.
func addrsIn(t *testing.T, h *netlink.Handle, n netip.Prefix) []netip.Addr {
	t.Helper()
	addrs, err := h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var in []netip.Addr
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && n.Contains(ip.Unmap()) {
			in = append(in, ip.Unmap())
		}
	}
	return in
}

// charonRouteTable is where charon installs its routes into the TUN
// device (charon.routing_table's default), with a rule to look it up.
const charonRouteTable = 220

// TestUserspaceFailureCleansUp: when the tunnel cannot come up (the two
// sides have different PSKs), StartUserspace fails on both sides (the
// initiator at once with the peer's AUTHENTICATION_FAILED, the responder by
// its deadline), with charon's log in the error, and leaves nothing running,
// no directory and (in the lab's routed layout, where StartUserspace adds
// one) no source address behind.
func TestUserspaceFailureCleansUp(t *testing.T) {
	skipUnlessUserspace(t)
	before := tempDirs(t)
	p := newRoutedPair(t, testWires, testPods)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	errc := make(chan error, 2)
	for i := range 2 {
		psk, err := NewPSK()
		if err != nil {
			t.Fatal(err)
		}
		cfg := UserspaceConfig{Local: p.wire[i], Remote: p.wire[1-i], LocalNet: p.podNet[i], RemoteNet: p.podNet[1-i],
			Alg: AESGCM128, PSK: psk, Initiate: i == 0}
		go func() {
			stop, err := StartUserspace(ctx, int(p.ns[i]), cfg)
			if err == nil {
				_ = stop()
				err = errors.New("started with mismatched PSKs")
			}
			errc <- err
		}()
	}
	for range 2 {
		err := <-errc
		t.Logf("%.300s", err)
		if !strings.Contains(err.Error(), "AUTHENTICATION_FAILED") && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("want AUTHENTICATION_FAILED or a deadline error, got %v", err)
		}
		if !strings.Contains(err.Error(), "charon.log") {
			t.Errorf("the error lacks charon's log: %v", err)
		}
	}
	for i := range 2 {
		if pids := procsInNS(t, int(p.ns[i])); len(pids) > 0 {
			t.Errorf("node %d: processes %v still run in the namespace", i, pids)
		}
		if a := addrsIn(t, p.h[i], p.podNet[i]); len(a) > 0 {
			t.Errorf("node %d: address %v left behind in %v", i, a, p.podNet[i])
		}
	}
	if after := tempDirs(t); len(after) > len(before) {
		t.Errorf("left behind: %v (before: %v)", after, before)
	}
}

// startUserspacePair starts both sides concurrently (node 0 initiates) and
// returns their stop functions, also registered for cleanup.
func startUserspacePair(t *testing.T, p *nodePair, alg Algorithm) [2]func() error {
	t.Helper()
	psk, err := NewPSK()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		stop func() error
		err  error
	}
	res := [2]chan result{make(chan result, 1), make(chan result, 1)}
	for i := range 2 {
		cfg := UserspaceConfig{
			Local: p.wire[i], Remote: p.wire[1-i], LocalNet: p.podNet[i], RemoteNet: p.podNet[1-i],
			Alg: alg, PSK: psk, Initiate: i == 0,
		}
		go func() {
			stop, err := StartUserspace(ctx, int(p.ns[i]), cfg)
			res[i] <- result{stop, err}
		}()
	}
	var stops [2]func() error
	var errs []error
	for i := range 2 {
		r := <-res[i]
		if r.err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", i, r.err))
			continue
		}
		stops[i] = r.stop
		t.Cleanup(func() { _ = r.stop() })
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return stops
}

// tempDirs lists StartUserspace's temporary directories.
func tempDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "cnibench-ipsec-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// procsInNS lists the processes (other than this one) whose main thread is
// in the network namespace of fd.
func procsInNS(t *testing.T, fd int) []int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	want := "net:[" + strconv.FormatUint(st.Ino, 10) + "]"
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/net")); err == nil && l == want {
			pids = append(pids, pid)
		}
	}
	return slices.Clip(pids)
}

func TestProbeUserspaceMissing(t *testing.T) {
	none := func(string) bool { return false }
	err := probeUserspace(none, func() bool { return false })
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("got %v, want ErrNotSupported", err)
	}
	for _, want := range []string{"charon (", "swanctl", "kernel-libipsec", "/dev/net/tun",
		"apt-get install strongswan-charon strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins strongswan-libcharon libstrongswan"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("reason lacks %q: %v", want, err)
		}
	}
	// Only the extra plugins missing: only their package is named.
	onlyExtra := func(p string) bool { return !strings.HasSuffix(p, "libstrongswan-kernel-libipsec.so") }
	err = probeUserspace(onlyExtra, func() bool { return true })
	if err == nil || !strings.HasSuffix(err.Error(), "apt-get install libcharon-extra-plugins") {
		t.Errorf("got %v, want only libcharon-extra-plugins to install", err)
	}
	if err := probeUserspace(func(string) bool { return true }, func() bool { return true }); err != nil {
		t.Errorf("everything there: %v", err)
	}
}

// TestEnsureSourceAddr: a node without an address in its pod CIDR gets the
// CIDR's network address on lo, and undo takes it away again; a node with
// one (the tests' loopback pod address) is left alone; a CIDR with no
// spare address is refused.
func TestEnsureSourceAddr(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	routed := newRoutedPair(t, testWires, testPods)
	addr, undo, err := ensureSourceAddr(int(routed.ns[0]), routed.podNet[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := routed.podNet[0].Addr(); addr != want {
		t.Errorf("added %v, want the network address %v", addr, want)
	}
	if got := addrsIn(t, routed.h[0], routed.podNet[0]); !slices.Equal(got, []netip.Addr{addr}) {
		t.Errorf("node has %v in %v, want [%v]", got, routed.podNet[0], addr)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if got := addrsIn(t, routed.h[0], routed.podNet[0]); len(got) > 0 {
		t.Errorf("undo left %v", got)
	}
	if _, _, err := ensureSourceAddr(int(routed.ns[0]), netip.PrefixFrom(routed.pod[0], 32)); err == nil {
		t.Error("a /32 pod CIDR without a node address was accepted")
	}

	plain := newNodePair(t, testWires, testPods)
	addr, undo, err = ensureSourceAddr(int(plain.ns[0]), plain.podNet[0])
	if err != nil {
		t.Fatal(err)
	}
	if addr != plain.pod[0] {
		t.Errorf("got %v, want the existing %v", addr, plain.pod[0])
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	if got := addrsIn(t, plain.h[0], plain.podNet[0]); !slices.Equal(got, []netip.Addr{plain.pod[0]}) {
		t.Errorf("undo of nothing changed the addresses: %v", got)
	}
}
