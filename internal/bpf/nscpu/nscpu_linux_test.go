//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nscpu

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/testutil"
)

// slack covers packets other than the test's datagrams: ARP, IPv6 is off
// on these devices (no addresses) but a neighbour probe may still pass.
const slack = 50

func start(t *testing.T) *Accountant {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	a, err := Start()
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return a
}

func read(t *testing.T, a *Accountant) (map[uint64]Usage, Totals) {
	t.Helper()
	u, err := a.Read()
	if err != nil {
		t.Fatal(err)
	}
	tot, err := a.Totals()
	if err != nil {
		t.Fatal(err)
	}
	return u, tot
}

func subTotals(x, y Totals) Totals {
	return Totals{
		NetRxNs: x.NetRxNs - y.NetRxNs, NetRxRuns: x.NetRxRuns - y.NetRxRuns, NetRxInsideNs: x.NetRxInsideNs - y.NetRxInsideNs,
		Receives: x.Receives - y.Receives, GROs: x.GROs - y.GROs, Polls: x.Polls - y.Polls, Exits: x.Exits - y.Exits,
		Segments: x.Segments - y.Segments, Stale: x.Stale - y.Stale, MapFull: x.MapFull - y.MapFull,
	}
}

// flowCheck sends UDP from A through B (which forwards) to C for a second
// and checks where the receive time went: B and C are charged time and
// packets, at least one per datagram C's socket got and not more than A
// sent; A, which only sends, and the idle D are charged (almost) nothing.
// It returns the totals' increase.
func flowCheck(t *testing.T, a *Accountant, l *line, flow *udpFlow) Totals {
	t.Helper()
	u0, t0 := read(t, a)
	flow.received.Store(0)
	begin := time.Now()
	sent, _ := flow.send(time.Second)
	elapsed := time.Since(begin)
	u1, t1 := read(t, a)
	d, tot := Sub(u1, u0), subTotals(t1, t0)
	got := flow.received.Load()
	t.Logf("A sent %d datagrams, C read %d, in %v", sent, got, elapsed.Round(time.Millisecond))
	for _, n := range []struct {
		name string
		ns   *testNS
	}{{"A", l.a}, {"B", l.b}, {"C", l.c}, {"D", l.d}} {
		u := d[n.ns.ino]
		per := 0.0
		if u.Packets > 0 {
			per = float64(u.SoftirqNs) / float64(u.Packets)
		}
		t.Logf("%s (netns %d): %d packets, %v (%.0f ns/packet)", n.name, n.ns.ino, u.Packets, time.Duration(u.SoftirqNs), per)
	}
	t.Logf("totals: %+v; NET_RX time outside segments %v", tot, time.Duration(tot.NetRxOutside()))

	if got < 1000 {
		t.Fatalf("C read only %d datagrams: the lab does not forward", got)
	}
	b, c := d[l.b.ino], d[l.c.ino]
	for _, x := range []struct {
		name string
		u    Usage
	}{{"B", b}, {"C", c}} {
		if x.u.SoftirqNs == 0 || x.u.Packets == 0 {
			t.Errorf("%s: charged %+v, want time and packets", x.name, x.u)
		}
		if x.u.Packets < got {
			t.Errorf("%s: %d packets, fewer than the %d datagrams C read (each went through %s)", x.name, x.u.Packets, got, x.name)
		}
		if x.u.Packets > sent+slack {
			t.Errorf("%s: %d packets, more than the %d datagrams A sent (+%d)", x.name, x.u.Packets, sent, slack)
		}
		// A forward without netfilter or a delivery to a socket takes
		// from a few hundred ns to tens of µs.
		if per := x.u.SoftirqNs / max(x.u.Packets, 1); per < 50 || per > 1_000_000 {
			t.Errorf("%s: %d ns per packet is implausible", x.name, per)
		}
	}
	if c.Packets > b.Packets+slack {
		t.Errorf("C: %d packets, more than B forwarded (%d)", c.Packets, b.Packets)
	}
	if u := d[l.a.ino]; u.Packets > slack {
		t.Errorf("A, which only sends, was charged %d packets", u.Packets)
	}
	if u, ok := d[l.d.ino]; ok {
		t.Errorf("the idle namespace D was charged %+v", u)
	}
	// The time charged cannot exceed the CPUs' wall time.
	var sum uint64
	for _, u := range d {
		sum += u.SoftirqNs
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		if limit := uint64(elapsed) * uint64(set.Count()); sum > limit {
			t.Errorf("%v charged in %v on %d CPUs", time.Duration(sum), elapsed, set.Count())
		}
	}
	if tot.Receives < b.Packets+c.Packets {
		t.Errorf("%d receive events, fewer than the packets charged to B and C (%d)", tot.Receives, b.Packets+c.Packets)
	}
	return tot
}

// TestAccountsPerNamespace runs flowCheck with every veth receiving through
// the per-CPU backlog (netif_rx, the default), then with an XDP program on
// C's veth, which puts it in NAPI mode (veth_poll, GRO and the list
// receive).
func TestAccountsPerNamespace(t *testing.T) {
	a := start(t)
	l := newLine(t, false)
	flow := l.udpFlow(t)

	t.Run("backlog", func(t *testing.T) {
		flowCheck(t, a, l, flow)
	})

	t.Run("veth-napi", func(t *testing.T) {
		// An XDP_PASS program on C's c0 switches that veth to NAPI mode.
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type:         ebpf.XDP,
			License:      "MIT",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
		})
		if err != nil {
			t.Skipf("load an XDP program: %v", err)
		}
		defer prog.Close()
		var xl link.Link
		err = l.c.do(func() (err error) {
			xl, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: l.c.link(t, "c0").Attrs().Index, Flags: link.XDPDriverMode})
			return err
		})
		if err != nil {
			t.Skipf("native XDP on a veth: %v", err)
		}
		defer xl.Close()
		// Totals are machine-wide (other namespaces' traffic counts too),
		// so this only shows that GRO events were seen at all.
		if tot := flowCheck(t, a, l, flow); tot.GROs < flow.received.Load() {
			t.Errorf("%d napi_gro_receive_entry events for %d datagrams: C's veth did not receive in NAPI mode", tot.GROs, flow.received.Load())
		}
	})
}

// TestBridgeCountsOnce: with B's side towards A a bridge port, each packet
// is received twice in B (b0, then br0 from inside b0's receive); B is
// still charged one packet per datagram (flowCheck's upper bound).
func TestBridgeCountsOnce(t *testing.T) {
	a := start(t)
	l := newLine(t, true)
	flow := l.udpFlow(t)
	// Machine-wide, as above: a lower bound only.
	if tot := flowCheck(t, a, l, flow); tot.Receives < 3*flow.received.Load() {
		t.Errorf("%d receive events for %d datagrams: the bridge did not receive them again", tot.Receives, flow.received.Load())
	}
}

// TestCloseDetaches: Close removes the links and programs (their IDs
// disappear), frees the maps, and is idempotent; Read afterwards fails.
func TestCloseDetaches(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	a, err := Start()
	testutil.SkipIfNotSupported(t, err, ErrNotSupported)
	var progIDs []ebpf.ProgramID
	for _, p := range a.programs() {
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, ok := info.ID()
		if !ok {
			t.Fatal("program info without an ID")
		}
		progIDs = append(progIDs, id)
	}
	var linkIDs []link.ID
	for _, l := range a.links {
		info, err := l.Info()
		if err != nil {
			t.Fatal(err)
		}
		linkIDs = append(linkIDs, info.ID)
	}
	mapInfo, err := a.objs.NetnsUsage.Info()
	if err != nil {
		t.Fatal(err)
	}
	mapID, _ := mapInfo.ID()
	if len(progIDs) != 7 || len(linkIDs) != 7 {
		t.Fatalf("%d programs and %d links attached, want 7 of each", len(progIDs), len(linkIDs))
	}
	for _, id := range linkIDs {
		if l, err := link.NewFromID(id); err != nil {
			t.Fatalf("link %d before Close: %v", id, err)
		} else {
			l.Close()
		}
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := a.Read(); err == nil {
		t.Error("Read after Close succeeded")
	}

	// Links and programs are freed after an RCU grace period: poll.
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, id := range linkIDs {
			if l, err := link.NewFromID(id); err == nil {
				l.Close()
				left = append(left, "link")
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("link %d: %v", id, err)
			}
		}
		for _, id := range progIDs {
			if p, err := ebpf.NewProgramFromID(id); err == nil {
				p.Close()
				left = append(left, "program")
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("program %d: %v", id, err)
			}
		}
		if m, err := ebpf.NewMapFromID(mapID); err == nil {
			m.Close()
			left = append(left, "map")
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close, still there: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNetnsInode: the inode of a namespace handle is that of its
// /proc/self/task/TID/ns/net when a thread is inside it, differs between
// namespaces, and a non-namespace file is refused.
func TestNetnsInode(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	x, y := newTestNS(t), newTestNS(t)
	if x.ino == 0 || x.ino == y.ino {
		t.Fatalf("inodes %d and %d", x.ino, y.ino)
	}
	var inside uint64
	if err := x.do(func() error {
		var st unix.Stat_t
		if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
			return err
		}
		inside = st.Ino
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if inside != x.ino {
		t.Errorf("NetnsInode = %d, /proc/thread-self/ns/net inside = %d", x.ino, inside)
	}
	f, err := os.Open("/proc/self/ns/mnt")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if _, err := NetnsInode(int(f.Fd())); err == nil {
		t.Error("NetnsInode accepted a mount namespace")
	}
	g, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := NetnsInode(int(g.Fd())); err == nil {
		t.Error("NetnsInode accepted a regular file")
	}
}
