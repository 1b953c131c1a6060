package lab_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestDatapaths builds every datapath in one lab and checks each path:
// TCP both ways, path MTU, full-size DF datagrams.
func TestDatapaths(t *testing.T) {
	var names []string
	for _, n := range lab.Names() {
		if !strings.HasPrefix(n, "test-") {
			names = append(names, n)
		}
	}
	l := labtest.Up(t, lab.Options{Datapaths: names})
	for name, err := range l.Skipped() {
		if !errors.Is(err, lab.ErrNotSupported) {
			t.Errorf("datapath %s skipped with an error that is not ErrNotSupported: %v", name, err)
		}
		t.Logf("skipped %s: %v", name, err)
	}
	if len(l.Datapaths()) < 5 {
		t.Errorf("built %v; want at least baseline, veth-routing(-notrack), bridge, vxlan", l.Datapaths())
	}
	for _, name := range l.Datapaths() {
		t.Run(name, func(t *testing.T) {
			dp, topo, err := l.Datapath(name)
			if err != nil {
				t.Fatal(err)
			}
			if dp.PacketPath() == "" || dp.Description() == "" {
				t.Error("empty description or packet path")
			}
			kinds := []lab.PathKind{lab.CrossNode, lab.SameNode}
			if name == "baseline" || strings.HasPrefix(name, "baseline-") {
				// The node-to-node baselines (with and without a host
				// firewall) have no pods.
				kinds = []lab.PathKind{lab.NodeToNode}
			}
			for _, kind := range kinds {
				ep, err := l.Endpoint(name, kind)
				if err != nil {
					t.Fatal(err)
				}
				checkPath(t, string(kind), ep, topo)
			}
		})
	}
}

func checkPath(t *testing.T, kind string, ep lab.Endpoint, topo *lab.Topology) {
	t.Helper()
	payload := bytes.Repeat([]byte("cnibench"), 32<<10) // 256 KiB: many full-size segments
	// client -> server
	srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
	mtu, err := testutil.TCPRoundTrip(ep.Client.Do, srv, payload)
	if err != nil {
		t.Fatalf("%s: client -> server TCP: %v", kind, err)
	}
	if mtu != topo.PathMTU {
		t.Errorf("%s: IP_MTU of client -> server connection = %d, want path MTU %d", kind, mtu, topo.PathMTU)
	}
	// server -> client: the client's own address.
	clientIP := clientAddr(t, ep.Client, ep.ServerIP)
	cl := testutil.StartTCPEcho(t, ep.Client.Do, clientIP)
	if _, err := testutil.TCPRoundTrip(ep.Server.Do, cl, payload); err != nil {
		t.Fatalf("%s: server -> client TCP: %v", kind, err)
	}
	// A full-size DF datagram crosses the path; one byte more does not
	// leave the client.
	usrv := testutil.StartUDPEcho(t, ep.Server.Do, ep.ServerIP)
	if err := testutil.UDPRoundTripDF(ep.Client.Do, usrv, topo.PathMTU); err != nil {
		t.Errorf("%s: %v", kind, err)
	}
	if err := testutil.UDPRoundTripDF(ep.Client.Do, usrv, topo.PathMTU+1); !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("%s: %d-byte DF datagram: got %v, want EMSGSIZE (pod MTU above the path MTU?)", kind, topo.PathMTU+1, err)
	}
}

// clientAddr returns the address the client uses towards server.
func clientAddr(t *testing.T, client *lab.NS, server netip.Addr) netip.Addr {
	t.Helper()
	var a netip.Addr
	err := client.Do(func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, 9)))
		if err != nil {
			return err
		}
		defer c.Close()
		a = c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		return nil
	})
	if err != nil {
		t.Fatalf("source address in %s: %v", client.Name, err)
	}
	return a
}

// TestStartInNamespace checks that NS.Start runs a child in the namespace
// and that Down kills it.
func TestStartInNamespace(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{"baseline"}})
	ep, err := l.Endpoint("baseline", lab.NodeToNode)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "readlink /proc/self/ns/net")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := ep.Server.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(ep.Server.Path(), &st); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), fmt.Sprintf("net:[%d]", st.Ino); got != want {
		t.Errorf("child ran in %s, want %s (%s)", got, want, ep.Server.Name)
	}
	if self, _ := os.Readlink("/proc/self/ns/net"); self == strings.TrimSpace(out.String()) {
		t.Error("child ran in the test's own namespace")
	}
}

// TestUpFailureLeavesNothing: a datapath failing half-way, a cancelled
// context and an unknown datapath leave no namespace and no state file.
func TestUpFailureLeavesNothing(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		datapaths []string
		ctx       func() (context.Context, context.CancelFunc)
		want      string
	}{
		"failing datapath": {[]string{"baseline", "test-fail"}, nil, "half-way failure"},
		"cancelled in setup": {[]string{"bridge", "test-cancel", "baseline"}, func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(ctx)
			cancelMe = cancel
			return c, cancel
		}, "context canceled"},
		"unknown datapath": {[]string{"baseline", "nope"}, nil, `unknown datapath "nope"`},
	} {
		t.Run(name, func(t *testing.T) {
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			if tc.ctx != nil {
				c, cancel = tc.ctx()
			}
			defer cancel()
			runID := "t" + strings.ReplaceAll(strings.ReplaceAll(name, " ", ""), "-", "")[:6]
			l := lab.New(labtest.Logger(t))
			err := l.Up(c, lab.Options{Datapaths: tc.datapaths, RunID: runID})
			if err == nil {
				_ = l.Down(ctx)
				t.Fatal("lab up succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			labtest.AssertNothingLeft(t, runID)
		})
	}
}

var cancelMe context.CancelFunc

func init() {
	lab.Register(func() lab.Datapath { return &testDP{name: "test-fail"} })
	lab.Register(func() lab.Datapath { return &testDP{name: "test-cancel"} })
}

// testDP creates a namespace, then fails (test-fail) or cancels the lab's
// context (test-cancel).
type testDP struct{ name string }

func (d *testDP) Name() string        { return d.name }
func (d *testDP) Description() string { return "test datapath that fails half-way" }
func (d *testDP) PacketPath() string  { return "none" }
func (d *testDP) Probe() error        { return nil }
func (d *testDP) Teardown(context.Context) error {
	return nil
}

func (d *testDP) Setup(ctx context.Context, env *lab.Env) (*lab.Topology, error) {
	if _, err := env.NewNS(ctx, lab.RoleNode1); err != nil {
		return nil, err
	}
	if d.name == "test-cancel" {
		cancelMe()
		return nil, ctx.Err()
	}
	return nil, errors.New("half-way failure")
}

// TestEBPFHostRoutingBypass proves the BPF programs carry the pod traffic:
// their redirect counters grow and the nodes' conntrack stays (nearly)
// empty although the same conntrack-engaging rules as veth-routing are
// installed.
func TestEBPFHostRoutingBypass(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{"ebpf-host-routing"}})
	if err, ok := l.Skipped()["ebpf-host-routing"]; ok {
		t.Skip(err)
	}
	dp, topo, err := l.Datapath("ebpf-host-routing")
	if err != nil {
		t.Fatal(err)
	}
	const conns = 20
	for _, kind := range []lab.PathKind{lab.CrossNode, lab.SameNode} {
		ep, err := l.Endpoint("ebpf-host-routing", kind)
		if err != nil {
			t.Fatal(err)
		}
		srv := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
		for range conns {
			if _, err := testutil.TCPRoundTrip(ep.Client.Do, srv, []byte("ping")); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
	}
	ctr, err := dp.(lab.CounterReporter).Counters()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BPF counters: %v", ctr)
	if ctr["node1.redirect_neigh"] < conns || ctr["node2.redirect_peer"] < 2*conns {
		t.Errorf("BPF host routing redirected too little for %d connections per path: %v", conns, ctr)
	}
	for _, node := range topo.Nodes {
		c, err := node.ConntrackCount()
		if err != nil {
			t.Fatal(err)
		}
		nft, err := lab.NftCounters(node)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d conntrack entries, nft %v", node.Name, c, nft)
		if c >= conns {
			t.Errorf("%s: %d conntrack entries after %d connections: pod traffic went through the node's netfilter", node.Name, c, conns)
		}
	}
}

// TestStatusAndCleanup: a lab whose owner is alive is reported as such and
// kept by Cleanup; once its owner is dead (simulated by rewriting the state
// file) it is leaked, and Cleanup removes its namespaces and kills what
// still runs in them.
func TestStatusAndCleanup(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{"baseline"}})
	runID := l.RunID()
	ctx := context.Background()
	find := func() lab.RunStatus {
		t.Helper()
		runs, err := lab.Status()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.RunID == runID {
				return r
			}
		}
		t.Fatalf("run %s missing from Status: %+v", runID, runs)
		return lab.RunStatus{}
	}
	if r := find(); !r.OwnerAlive || r.Leaked || len(r.Namespaces) != 2 || r.State == nil {
		t.Errorf("live lab: %+v", r)
	}
	res, err := lab.Cleanup(ctx, lab.CleanupOptions{RunID: runID})
	if err != nil || len(res.Kept) != 1 || len(res.Removed) != 0 {
		t.Errorf("Cleanup of a live lab: %+v, %v; want it kept", res, err)
	}

	// A process left in the lab, as a crashed run's server would be.
	ep, _ := l.Endpoint("baseline", lab.NodeToNode)
	cmd := exec.Command("sleep", "60")
	if err := ep.Server.Start(cmd); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	// The owner "dies".
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	st := l.State()
	st.PID, st.PIDStart = dead.Process.Pid, 1
	b, _ := st.Marshal()
	if err := os.WriteFile(lab.StatePath(runID), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := find(); r.OwnerAlive || !r.Leaked {
		t.Errorf("lab with a dead owner: %+v, want leaked", r)
	}
	res, err = lab.Cleanup(ctx, lab.CleanupOptions{RunID: runID})
	if err != nil || len(res.Removed) != 1 {
		t.Errorf("Cleanup of a leaked lab: %+v, %v", res, err)
	}
	labtest.AssertNothingLeft(t, runID)
	select {
	case err := <-waited:
		if err == nil {
			t.Error("process in the leaked lab exited normally; want it killed")
		}
	case <-time.After(10 * time.Second):
		t.Error("process in the leaked lab still runs 10s after Cleanup")
	}
}

// TestJumboMTU: the wire MTU option reaches every hop, and vxlan lowers its
// pods' MTU by the encapsulation overhead.
func TestJumboMTU(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{"vxlan", "veth-routing"}, MTU: 9000})
	for name, want := range map[string]int{"vxlan": 9000 - lab.VXLANOverhead, "veth-routing": 9000} {
		_, topo, err := l.Datapath(name)
		if err != nil {
			t.Fatal(err)
		}
		if topo.PodMTU != want || topo.PathMTU != want {
			t.Errorf("%s: pod MTU %d, path MTU %d; want %d", name, topo.PodMTU, topo.PathMTU, want)
		}
		ep, err := l.Endpoint(name, lab.CrossNode)
		if err != nil {
			t.Fatal(err)
		}
		checkPath(t, name+" cross-node", ep, topo)
	}
}
