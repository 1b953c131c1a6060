package filter

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestCompositeEnforcement: calico-like and cilium-like drop the denied
// address, let others through, follow Add/Remove, stop on Detach and leave
// nothing behind; calico-like is built new-connection, cilium-like
// every-packet.
func TestCompositeEnforcement(t *testing.T) {
	for _, tc := range []struct {
		name  string
		progs []string
		trav  string
	}{
		{MechCalicoLike, []string{"ipset", "iptables-nft", "iptables-nft-restore"}, TraversalNewConnection},
		{MechCiliumLike, []string{"nft"}, TraversalEveryPacket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.SkipUnlessRoot(t)
			testutil.NeedProgram(t, tc.progs...)
			m, err := Lookup(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Probe(); err != nil {
				if errors.Is(err, ErrNotSupported) {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			t.Parallel()
			ctx := t.Context()
			cidrs, err := Generate(nfSeed, 1000, nfDenied)
			if err != nil {
				t.Fatal(err)
			}
			extra := nfFreeAddr(t, cidrs)
			lab := newNFLab(t, nfDenied, extra)
			ordinary := testutil.StartUDPEcho(t, lab.server, netip.MustParseAddr(nfServerAddr))
			denied := testutil.StartUDPEcho(t, lab.server, nfDenied)
			other := testutil.StartUDPEcho(t, lab.server, extra)
			lab.expect(t, "before load", denied, true)

			f, info, err := m.Load(ctx, lab.target, cidrs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					_ = f.Close(ctx)
				}
			})
			if info.Traversal != tc.trav || info.Method == "" {
				t.Errorf("LoadInfo %+v: want traversal %s and a method", info, tc.trav)
			}
			s0 := nfStats(t, f, 1000)
			lab.expect(t, "after load", denied, false)
			if s := nfStats(t, f, 1000); s.Dropped <= s0.Dropped {
				t.Fatalf("dropped counter %d -> %d, want it to grow", s0.Dropped, s.Dropped)
			}
			lab.expect(t, "after load, ordinary", ordinary, true)
			lab.expect(t, "after load, not denied", other, true)
			if err := f.Detach(ctx); err != nil {
				t.Fatal(err)
			}
			lab.expect(t, "detached", denied, true)
			if err := f.Attach(ctx); err != nil {
				t.Fatal(err)
			}
			lab.expect(t, "attached again", denied, false)
			added := netip.PrefixFrom(extra, 32)
			if err := f.Add(ctx, added); err != nil {
				t.Fatal(err)
			}
			lab.expect(t, "after Add", other, false)
			if err := f.Remove(ctx, added); err != nil {
				t.Fatal(err)
			}
			lab.expect(t, "after Remove", other, true)
			if err := f.Close(ctx); err != nil {
				t.Fatal(err)
			}
			closed = true
			if left := lab.leftovers(t); len(left) > 0 {
				t.Fatalf("left after Close: %q", left)
			}
			lab.expect(t, "after close", denied, true)
		})
	}
}

// TestIPSetDefaultHashFull: ipset-default (maxelem 65536) loads 65536 CIDRs
// and refuses one more, by the kernel's "hash is full", as a too-large
// error; a load of 65537 is refused the same way and leaves nothing.
func TestIPSetDefaultHashFull(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "ipset", "iptables-nft", "iptables-nft-restore")
	m, err := Lookup(MechIPSetDefault)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	lab := newNFLab(t)
	// Twice maxelem: the kernel checks maxelem against a count it sums
	// lazily over its hash's regions, so a load just one entry over is
	// refused only most of the time (kernel 6.18); well over, always.
	over, err := Generate(nfSeed, 2*IPSetDefaultMaxelem, nfDenied)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Load(ctx, lab.target, over, Options{})
	if !errors.Is(err, scenario.ErrTooLarge) || !strings.Contains(strings.ToLower(err.Error()), "hash is full") {
		t.Fatalf("load of %d: err = %v, want too large: hash is full", len(over), err)
	}
	t.Logf("recorded as: %s", scenario.Point{Skip: err}.SkipReason())
	if left := lab.leftovers(t); len(left) > 0 {
		t.Fatalf("left after the refused load: %q", left)
	}

	f, info, err := m.Load(ctx, lab.target, over[:IPSetDefaultMaxelem], Options{})
	if err != nil {
		t.Fatalf("load of exactly maxelem: %v", err)
	}
	defer f.Close(ctx)
	if !strings.Contains(info.Method, "maxelem 65536") {
		t.Errorf("method %q does not name maxelem 65536", info.Method)
	}
	// Adds beyond maxelem: the kernel's lazy count may let a few through
	// before it refuses; it must refuse within a few hundred.
	for _, p := range over[IPSetDefaultMaxelem : IPSetDefaultMaxelem+512] {
		if err = f.Add(ctx, p); err != nil {
			break
		}
	}
	if !errors.Is(err, scenario.ErrTooLarge) || !strings.Contains(err.Error(), "ipset error 4352") {
		t.Fatalf("Add beyond maxelem: err = %v, want too large with ipset error 4352", err)
	}
}

// TestNewConnectionRescuesHandshakeUDP: behind a new-connection filter a
// one-way UDP stream never becomes established (every datagram traverses
// the deny set), while one that starts with a datagram each way (iperf3's,
// engine's --udp-handshake) is established from its second datagram on.
func TestNewConnectionRescuesHandshakeUDP(t *testing.T) {
	for _, tc := range []struct {
		mech  string
		ipt   string
		progs []string
	}{
		{"iptables-legacy", "iptables-legacy", []string{"iptables-legacy", "iptables-legacy-restore"}},
		{MechCalicoLike, "iptables-nft", []string{"ipset", "iptables-nft", "iptables-nft-restore"}},
	} {
		t.Run(tc.mech, func(t *testing.T) {
			m := nfLookup(t, tc.mech, tc.progs)
			ctx := t.Context()
			cidrs, err := Generate(nfSeed, 1000, nfDenied)
			if err != nil {
				t.Fatal(err)
			}
			lab := newNFLab(t)
			srv := netip.MustParseAddr(nfServerAddr)
			echo := testutil.StartUDPEcho(t, lab.server, srv)
			var sink *net.UDPConn
			if err := lab.server(func() (err error) {
				sink, err = net.ListenUDP("udp4", &net.UDPAddr{IP: srv.AsSlice()})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer sink.Close()
			f, _, err := m.Load(ctx, lab.target, cidrs, Options{EstablishedBypass: true})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(ctx)
			established := func() uint64 {
				t.Helper()
				res, err := runIn(ctx, lab.target, nil, tc.ipt, "-w", "-L", chainEgress, "-v", "-x", "-n")
				if err != nil {
					t.Fatal(err)
				}
				n, err := parseFirstRuleCounter(res.Stdout)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			const datagrams = 200
			stream := func(to netip.AddrPort, handshake bool) {
				t.Helper()
				var c *net.UDPConn
				if err := lab.client(func() (err error) {
					c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(to))
					return err
				}); err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if handshake {
					if _, err := c.Write([]byte("hello")); err != nil {
						t.Fatal(err)
					}
					_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
					if _, err := c.Read(make([]byte, 64)); err != nil {
						t.Fatalf("handshake reply: %v", err)
					}
				}
				for range datagrams {
					if _, err := c.Write([]byte("stream")); err != nil {
						t.Fatal(err)
					}
					time.Sleep(50 * time.Microsecond)
				}
			}
			e0 := established()
			stream(netip.AddrPortFrom(srv, uint16(sink.LocalAddr().(*net.UDPAddr).Port)), false)
			e1 := established()
			stream(echo, true)
			e2 := established()
			if e1 != e0 {
				t.Errorf("one-way stream: %d datagrams passed the established bypass, want 0 (every one traverses the deny set)", e1-e0)
			}
			if e2-e1 < datagrams {
				t.Errorf("handshake stream: %d datagrams passed the established bypass, want at least %d", e2-e1, datagrams)
			}
			t.Logf("bypassed: one-way %d, handshake %d of %d", e1-e0, e2-e1, datagrams)
		})
	}
}

// parseFirstRuleCounter reads the packet counter of a chain listing's
// first rule (`iptables -L CHAIN -v -x -n`).
func parseFirstRuleCounter(out string) (uint64, error) {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "Chain" || f[0] == "pkts" {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse packet counter %q: %w", f[0], err)
		}
		return n, nil
	}
	return 0, errors.New("no rule in the chain listing")
}
