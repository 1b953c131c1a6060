package lab_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/lab/labtest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestResetState: conntrack entries left by earlier connections are gone
// after ResetState, and the TIME_WAIT sockets they left are counted.
func TestResetState(t *testing.T) {
	l := labtest.Up(t, lab.Options{Datapaths: []string{"veth-routing"}})
	ep, err := l.Endpoint("veth-routing", lab.CrossNode)
	if err != nil {
		t.Fatal(err)
	}
	_, topo, err := l.Datapath("veth-routing")
	if err != nil {
		t.Fatal(err)
	}
	to := testutil.StartTCPEcho(t, ep.Server.Do, ep.ServerIP)
	const conns = 20
	for i := 0; i < conns; i++ {
		if _, err := testutil.TCPRoundTrip(ep.Client.Do, to, []byte(strings.Repeat("x", 100))); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		t.Helper()
		n := 0
		for _, node := range topo.Nodes {
			c, err := node.ConntrackCount()
			if err != nil {
				t.Fatal(err)
			}
			n += c
		}
		return n
	}
	if c := count(); c < conns {
		t.Fatalf("%d conntrack entries before the reset, want >= %d", c, conns)
	}
	tw, err := topo.TimeWait()
	if err != nil {
		t.Fatal(err)
	}
	if tw < 1 {
		t.Errorf("TimeWait = %d after %d closed connections, want > 0", tw, conns)
	}
	if err := topo.ResetState(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := count(); c != 0 {
		t.Errorf("%d conntrack entries after ResetState, want 0", c)
	}
}
