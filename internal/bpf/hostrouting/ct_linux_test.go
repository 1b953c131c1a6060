//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package hostrouting

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestConnTrackAndPolicy: the full model fills its CT map (one entry per
// connection, replies found by the reversed tuple), and a deny entry in the
// policy map drops a new connection from that source.
func TestConnTrackAndPolicy(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	skipUnlessTool(t, "nft", "nsenter")
	l := &lab{prefix: testPrefix(t)}
	n1 := l.newNode(t, "n1", "198.18.1.0/24")
	a1 := l.newPod(t, n1, "a1", "198.18.1.10", "cnbh1")
	a2 := l.newPod(t, n1, "a2", "198.18.1.11", "cnbh2")
	p := attach(t, n1, false)
	if err := p.SetPolicy(netip.MustParsePrefix("198.18.1.0/24"), true); err != nil {
		t.Fatal(err)
	}
	const conns = 5
	for i := range conns {
		tcpExchange(t, a1, a2, 8080+i, 64<<10)
	}
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := p.CTEntries()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v, %d CT entries", c, entries)
	if entries < conns || c.CTNew < conns {
		t.Errorf("%d CT entries, %d CT misses after %d connections: want at least %d each", entries, c.CTNew, conns, conns)
	}
	if c.CTEstablished == 0 || c.CTReply == 0 {
		t.Errorf("CT hits: %d original, %d reply; want both > 0", c.CTEstablished, c.CTReply)
	}
	if c.PolicyDenied != 0 {
		t.Errorf("policy denied %d packets with an allow entry", c.PolicyDenied)
	}

	// Deny a1: its next connection must not get through, and the drop must
	// be the policy's.
	if err := p.SetPolicy(netip.MustParsePrefix("198.18.1.10/32"), false); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(a2.ip.String(), strconv.Itoa(9090))
	var ln net.Listener
	if err := runInNS(a2.h, func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = runInNS(a1.h, func() error {
		c, err := net.DialTimeout("tcp4", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil {
		t.Fatal("connection from a denied source got through")
	}
	c2, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c2.PolicyDenied == 0 {
		t.Errorf("connection refused but the policy counter is 0: %+v", c2)
	}
}

// TestBare: the bare program redirects without touching the CT map.
func TestBare(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	skipUnlessTool(t, "nft", "nsenter")
	l := &lab{prefix: testPrefix(t)}
	n1 := l.newNode(t, "n1", "198.18.1.0/24")
	a1 := l.newPod(t, n1, "a1", "198.18.1.10", "cnbh1")
	a2 := l.newPod(t, n1, "a2", "198.18.1.11", "cnbh2")
	p := attachWith(t, n1, false, Options{Bare: true})
	if !p.Bare() {
		t.Fatal("Bare() = false for a bare program")
	}
	tcpExchange(t, a1, a2, 8080, 64<<10)
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := p.CTEntries()
	if err != nil {
		t.Fatal(err)
	}
	if c.RedirectPeer == 0 {
		t.Errorf("bare program redirected nothing: %+v", c)
	}
	if entries != 0 || c.CTNew+c.CTEstablished+c.CTReply != 0 {
		t.Errorf("bare program used the CT map: %d entries, %+v", entries, c)
	}
}
