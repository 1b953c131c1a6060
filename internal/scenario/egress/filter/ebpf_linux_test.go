package filter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// ebpfLab is client ns → node ns (the filter on the client veth's node
// side) → server ns, routed so that only the filter can drop: the server
// owns an ordinary address and two inside 240.0.0.0/4, one in a denied
// CIDR (denied) and one outside the set (spare, for Add/Remove).
type ebpfLab struct {
	client, node, server netns.NsHandle
	ordinary             netip.AddrPort // server echo, never denied
	denied, spare        netip.AddrPort // server echoes inside 240.0.0.0/4
}

const (
	labNodeDev = "cnbt-pod0"
	labSrvDev  = "cnbt-srv0"
)

func newEBPFLab(t *testing.T, denied, spare netip.Addr) *ebpfLab {
	t.Helper()
	l := &ebpfLab{}
	for _, h := range []*netns.NsHandle{&l.client, &l.node, &l.server} {
		ns, err := nsrun.NewScratch()
		if err != nil {
			t.Fatalf("new netns: %v", err)
		}
		t.Cleanup(func() { ns.Close() })
		*h = ns
	}
	nh, err := netlink.NewHandleAt(l.node)
	if err != nil {
		t.Fatalf("netlink handle in node ns: %v", err)
	}
	defer nh.Close()
	type side struct {
		nodeDev, nodeIP, peerIP string
		peer                    netns.NsHandle
	}
	for _, s := range []side{
		{labNodeDev, "10.231.1.1/24", "10.231.1.2/24", l.client},
		{labSrvDev, "10.231.2.1/24", "10.231.2.2/24", l.server},
	} {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: s.nodeDev}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(s.peer))}
		if err := nh.LinkAdd(veth); err != nil {
			t.Fatalf("add veth %s: %v", s.nodeDev, err)
		}
		setUp(t, nh, s.nodeDev, s.nodeIP)
		ph, err := netlink.NewHandleAt(s.peer)
		if err != nil {
			t.Fatalf("netlink handle in peer ns: %v", err)
		}
		setUp(t, ph, "eth0", s.peerIP)
		setUp(t, ph, "lo", "")
		gw := netip.MustParsePrefix(s.nodeIP).Addr()
		if err := ph.RouteAdd(&netlink.Route{Gw: gw.AsSlice()}); err != nil {
			t.Fatalf("default route via %s: %v", gw, err)
		}
		ph.Close()
	}
	sh, err := netlink.NewHandleAt(l.server)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	eth0, err := sh.LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	srvLink, err := nh.LinkByName(labSrvDev)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []netip.Addr{denied, spare} {
		if err := sh.AddrAdd(eth0, &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(32, 32)}}); err != nil {
			t.Fatalf("add %s on server: %v", a, err)
		}
		if err := nh.RouteAdd(&netlink.Route{LinkIndex: srvLink.Attrs().Index, Dst: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(32, 32)}, Gw: net.IP{10, 231, 2, 2}}); err != nil {
			t.Fatalf("route %s via server: %v", a, err)
		}
	}
	if err := l.do(l.node)(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}); err != nil {
		t.Fatalf("node ip_forward: %v", err)
	}
	l.ordinary = testutil.StartUDPEcho(t, l.do(l.server), netip.MustParseAddr("10.231.2.2"))
	l.denied = testutil.StartUDPEcho(t, l.do(l.server), denied)
	l.spare = testutil.StartUDPEcho(t, l.do(l.server), spare)
	return l
}

func setUp(t *testing.T, h *netlink.Handle, dev, cidr string) {
	t.Helper()
	lk, err := h.LinkByName(dev)
	if err != nil {
		t.Fatalf("find %s: %v", dev, err)
	}
	if cidr != "" {
		a, err := netlink.ParseAddr(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.AddrAdd(lk, a); err != nil {
			t.Fatalf("address %s on %s: %v", cidr, dev, err)
		}
	}
	if err := h.LinkSetUp(lk); err != nil {
		t.Fatalf("set %s up: %v", dev, err)
	}
}

func (l *ebpfLab) do(ns netns.NsHandle) func(func() error) error {
	return func(f func() error) error { return nsrun.Do(ns, f) }
}

func (l *ebpfLab) target() Target {
	return Target{NSFd: int(l.node), Dev: labNodeDev, Do: l.do(l.node)}
}

// arrives sends one UDP datagram from the client to to and reports whether
// the echo came back within wait.
func (l *ebpfLab) arrives(t *testing.T, to netip.AddrPort, wait time.Duration) bool {
	t.Helper()
	var c *net.UDPConn
	if err := l.do(l.client)(func() (err error) {
		c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
		return err
	}); err != nil {
		t.Fatalf("dial %s: %v", to, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("cnibench egress probe")); err != nil {
		if errors.Is(err, unix.EPERM) {
			return false // dropped in the sender's own output path (a local filter)
		}
		t.Fatalf("send to %s: %v", to, err)
	}
	buf := make([]byte, 64)
	_, err := c.Read(buf)
	return err == nil
}

// mustArrive allows a few tries (the first packet may wait for ARP).
func (l *ebpfLab) mustArrive(t *testing.T, to netip.AddrPort, when string) {
	t.Helper()
	for range 3 {
		if l.arrives(t, to, time.Second) {
			return
		}
	}
	t.Fatalf("%s: probe to %s did not arrive", when, to)
}

func (l *ebpfLab) mustDrop(t *testing.T, f Filter, to netip.AddrPort, when string) {
	t.Helper()
	before, err := f.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l.arrives(t, to, 300*time.Millisecond) {
		t.Fatalf("%s: probe to %s arrived, want dropped", when, to)
	}
	after, err := f.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Dropped <= before.Dropped {
		t.Fatalf("%s: Dropped %d -> %d, want it to grow", when, before.Dropped, after.Dropped)
	}
}

// tcxPrograms lists the programs at TCX ingress of the node device.
func (l *ebpfLab) tcxPrograms(t *testing.T) int {
	t.Helper()
	var n int
	err := l.do(l.node)(func() error {
		ifi, err := net.InterfaceByName(labNodeDev)
		if err != nil {
			return err
		}
		res, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return err
		}
		n = len(res.Programs)
		return nil
	})
	if err != nil {
		t.Fatalf("query TCX programs on %s: %v", labNodeDev, err)
	}
	return n
}

func TestEBPFMechanisms(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	denied := netip.MustParseAddr("247.1.2.3")
	for _, name := range []string{"ebpf-lpm", "ebpf-hash"} {
		for _, n := range []int{10, 10000} {
			t.Run(fmt.Sprintf("%s/N=%d", name, n), func(t *testing.T) {
				m, err := Lookup(name)
				if err != nil {
					t.Fatal(err)
				}
				testutil.SkipIfNotSupported(t, m.Probe(), ErrNotSupported)
				if m.MaxRules() < 1_000_000 {
					t.Errorf("MaxRules = %d", m.MaxRules())
				}
				cidrs, err := Generate(uint64(n), n, denied)
				if err != nil {
					t.Fatal(err)
				}
				spare, ok := uncovered(cidrs)
				if !ok {
					t.Fatal("no address of 240.0.0.0/4 outside the generated set")
				}
				l := newEBPFLab(t, denied, spare)
				l.mustArrive(t, l.denied, "before Load")
				l.mustArrive(t, l.ordinary, "before Load")

				ctx := context.Background()
				f, info, err := m.Load(ctx, l.target(), cidrs, Options{EstablishedBypass: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close(ctx) })
				if info.Traversal != TraversalEveryPacket || info.Batches < 1 || info.Method == "" {
					t.Errorf("LoadInfo = %+v", info)
				}
				l.mustDrop(t, f, l.denied, "after Load")
				l.mustArrive(t, l.ordinary, "after Load")
				st, err := f.Stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if st.Rules != n || !st.KernelBytesKnown || st.KernelBytes <= 0 {
					t.Errorf("Stats = %+v, want Rules %d and kernel bytes", st, n)
				}

				if err := f.Detach(ctx); err != nil {
					t.Fatal(err)
				}
				if got := l.tcxPrograms(t); got != 0 {
					t.Errorf("after Detach: %d TCX programs", got)
				}
				l.mustArrive(t, l.denied, "after Detach (negative control)")
				if err := f.Attach(ctx); err != nil {
					t.Fatal(err)
				}
				l.mustDrop(t, f, l.denied, "after Attach")

				sp := netip.PrefixFrom(spare, 32)
				l.mustArrive(t, l.spare, "before Add")
				if err := f.Add(ctx, sp); err != nil {
					t.Fatal(err)
				}
				l.mustDrop(t, f, l.spare, "after Add "+sp.String())
				if err := f.Remove(ctx, sp); err != nil {
					t.Fatal(err)
				}
				l.mustArrive(t, l.spare, "after Remove "+sp.String())
				l.mustDrop(t, f, l.denied, "after Remove of another prefix")

				if err := f.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if got := l.tcxPrograms(t); got != 0 {
					t.Errorf("after Close: %d TCX programs", got)
				}
				l.mustArrive(t, l.denied, "after Close")
				if err := f.Close(ctx); err != nil {
					t.Errorf("second Close: %v", err)
				}
			})
		}
	}
}

func TestEBPFLoadBadTarget(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	m, err := Lookup("ebpf-lpm")
	if err != nil {
		t.Fatal(err)
	}
	testutil.SkipIfNotSupported(t, m.Probe(), ErrNotSupported)
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	tg := Target{NSFd: int(ns), Dev: "cnbt-missing", Do: func(f func() error) error { return nsrun.Do(ns, f) }}
	f, _, err := m.Load(context.Background(), tg, []netip.Prefix{netip.MustParsePrefix("240.0.0.0/24")}, Options{})
	if err == nil {
		f.Close(context.Background())
		t.Fatal("Load on a missing device succeeded")
	}
	if errors.Is(err, ErrNotSupported) {
		t.Fatalf("missing device reported as not supported: %v", err)
	}
}

// uncovered returns an address of 240.0.0.0/4 in none of cidrs (sorted).
func uncovered(cidrs []netip.Prefix) (netip.Addr, bool) {
	for a := netip.MustParseAddr("240.0.0.1"); DenyRange.Contains(a); a = a.Next() {
		hit := false
		for _, p := range cidrs {
			if p.Contains(a) {
				hit = true
				break
			}
		}
		if !hit {
			return a, true
		}
		if a.As4()[3] == 1 { // step /24 by /24 to stay quick
			b := a.As4()
			b[3] = 200
			a = netip.AddrFrom4(b)
		}
	}
	return netip.Addr{}, false
}

// TestEBPFBigLoad measures, for N = 1M (CNIBENCH_EGRESS_BIG_N), the time
// from the start of Load until the program is attached with the whole set,
// one Add and one Remove, and the process's RSS. Manual only:
//
//	CNIBENCH_EGRESS_BIG=1 go test -count=1 -v -run 'TestEBPFBigLoad/ebpf-lpm' ./internal/scenario/egress/
//
// Run one mechanism per process so that the peak RSS is its own.
func TestEBPFBigLoad(t *testing.T) {
	if os.Getenv("CNIBENCH_EGRESS_BIG") != "1" {
		t.Skip("manual measurement: set CNIBENCH_EGRESS_BIG=1")
	}
	testutil.SkipUnlessRoot(t)
	n := 1_000_000
	if v := os.Getenv("CNIBENCH_EGRESS_BIG_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("CNIBENCH_EGRESS_BIG_N: %v", err)
		}
	}
	denied := netip.MustParseAddr("247.1.2.3")
	for _, name := range []string{"ebpf-lpm", "ebpf-hash"} {
		t.Run(name, func(t *testing.T) {
			m, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			testutil.SkipIfNotSupported(t, m.Probe(), ErrNotSupported)
			cidrs, err := Generate(1, n, denied)
			if err != nil {
				t.Fatal(err)
			}
			ns, err := nsrun.NewScratch()
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			tg := Target{NSFd: int(ns), Dev: "lo", Do: func(f func() error) error { return nsrun.Do(ns, f) }}
			runtime.GC()
			rssBefore := procStatusKiB(t, "VmRSS")
			// Reset the peak RSS so that VmHWM below is the peak during Load.
			if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0o200); err != nil {
				t.Logf("reset VmHWM: %v (peak includes the generation)", err)
			}
			ctx := context.Background()
			cpu0 := cpuTime(t)
			start := time.Now()
			f, info, err := m.Load(ctx, tg, cidrs, Options{})
			load := time.Since(start)
			loadCPU := cpuTime(t) - cpu0
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(ctx)
			hwm := procStatusKiB(t, "VmHWM")
			extra := netip.MustParsePrefix("255.255.255.254/31") // outside DenyRange's generated slots
			start = time.Now()
			if err := f.Add(ctx, extra); err != nil {
				t.Fatal(err)
			}
			add := time.Since(start)
			start = time.Now()
			if err := f.Remove(ctx, extra); err != nil {
				t.Fatal(err)
			}
			remove := time.Since(start)
			st, err := f.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Rules != n {
				t.Errorf("Rules = %d, want %d", st.Rules, n)
			}
			start = time.Now()
			if err := f.Close(ctx); err != nil {
				t.Fatal(err)
			}
			closeT := time.Since(start)
			t.Logf("%s N=%d: load+attach %v (CPU %v; %s, %d batches); add %v, remove %v, close %v; kernel map memory %.1f MiB; RSS before load %.1f MiB, peak during load %.1f MiB",
				name, n, load, loadCPU, info.Method, info.Batches, add, remove, closeT,
				float64(st.KernelBytes)/(1<<20), float64(rssBefore)/1024, float64(hwm)/1024)
		})
	}
}

// procStatusKiB reads a "kB" field of /proc/self/status.
func procStatusKiB(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse %s %q: %v", field, v, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// cpuTime is the process's user plus system CPU time (the load's kernel
// work is system time of the loading thread; less sensitive than wall time
// to other processes on the machine).
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
