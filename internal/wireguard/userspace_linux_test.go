package wireguard

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/testutil"
)

// Addresses of TestUserspaceTunnel: a veth "wire" between two scratch
// namespaces, and tunnel addresses routed over WireGuard.
var (
	tunWire  = [2]netip.Prefix{netip.MustParsePrefix("198.18.210.1/24"), netip.MustParsePrefix("198.18.210.2/24")}
	tunInner = [2]netip.Prefix{netip.MustParsePrefix("10.200.0.1/24"), netip.MustParsePrefix("10.200.0.2/24")}
)

const (
	tunPort   = 51820
	tunVeth   = "wgtveth0"
	tunDevice = "wgt0"
)

// TestUserspaceTunnel runs two wireguard-go devices in-process, each
// started on a thread locked into its own scratch namespace, and checks
// that ping, TCP and UDP work through the tunnel, that the wire carries
// only WireGuard messages (a marker sent through the tunnel never appears
// in clear, while one sent over the plain wire does), and that closing the
// devices leaves no TUN device, socket or namespace behind.
func TestUserspaceTunnel(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if _, err := os.Stat(tunPath); err != nil {
		t.Skipf("no TUN support: %v", err)
	}
	var nsIno [2]uint64
	t.Cleanup(func() { checkNothingLeft(t, nsIno) }) // runs after every other cleanup
	var do [2]DoFunc
	var h [2]*netlink.Handle
	var ns [2]netns.NsHandle
	for i := range 2 {
		do[i], h[i], ns[i] = scratchNS(t)
		var st unix.Stat_t
		if err := unix.Fstat(int(ns[i]), &st); err != nil {
			t.Fatal(err)
		}
		nsIno[i] = st.Ino
	}
	setupWire(t, h, ns[1])

	var keys [2][2]Key // [node]{private, public}
	for i := range keys {
		priv, pub, err := GenerateKeyPair()
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = [2]Key{priv, pub}
	}
	var logs testutil.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t.Cleanup(func() {
		if s := logs.String(); s != "" {
			t.Logf("wireguard-go logs:\n%s", s)
		}
	})
	mtu := PodMTU(1500)
	var devs [2]*Userspace
	for i := range 2 {
		other := 1 - i
		cfg := Config{
			Iface:         tunDevice,
			PrivateKey:    keys[i][0],
			PeerPublicKey: keys[other][1],
			ListenPort:    tunPort,
			PeerEndpoint:  netip.AddrPortFrom(tunWire[other].Addr(), tunPort),
			AllowedIPs:    []netip.Prefix{netip.PrefixFrom(tunInner[other].Addr(), 32)},
			Address:       tunInner[i],
			MTU:           mtu,
		}
		if err := do[i](func() (err error) {
			devs[i], err = StartUserspace(cfg, logger)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { devs[i].Close() })
		// Before any traffic: the device and its sockets are in the
		// namespace (a socket left in the host's namespace would send
		// the handshake out of the host).
		if n := udpSockets(t, do[i], tunPort); n == 0 {
			t.Fatalf("node %d: no UDP socket on port %d in its namespace", i+1, tunPort)
		}
		l, err := h[i].LinkByName(tunDevice)
		if err != nil {
			t.Fatalf("node %d: TUN device not in its namespace: %v", i+1, err)
		}
		if l.Attrs().MTU != mtu || l.Attrs().Flags&net.FlagUp == 0 {
			t.Fatalf("node %d: %s MTU %d flags %v, want MTU %d and up", i+1, tunDevice, l.Attrs().MTU, l.Attrs().Flags, mtu)
		}
		if devs[i].Port() != tunPort || devs[i].Name() != tunDevice {
			t.Fatalf("node %d: device reports %s port %d", i+1, devs[i].Name(), devs[i].Port())
		}
	}
	veth, err := h[0].LinkByName(tunVeth)
	if err != nil {
		t.Fatal(err)
	}
	doA, doB := testutil.Do(do[0]), testutil.Do(do[1])

	// Negative control: a marker over the plain wire is seen in clear.
	plainEcho := testutil.StartTCPEcho(t, doB, tunWire[1].Addr())
	capt := startCapture(t, do[0], veth.Attrs().Index)
	marker := []byte(fmt.Sprintf("cnibench-wg-marker-plain-%d", time.Now().UnixNano()))
	if _, err := testutil.TCPRoundTrip(doA, plainEcho, marker); err != nil {
		t.Fatalf("plain TCP over the wire: %v", err)
	}
	if frames := capt.stop(); !anyContains(frames, marker) {
		t.Fatalf("the capture (%d frames on %s) misses a marker sent in clear: it proves nothing", len(frames), tunVeth)
	}

	// Through the tunnel.
	capt = startCapture(t, do[0], veth.Attrs().Index)
	if err := ping(do[0], tunInner[1].Addr()); err != nil {
		t.Fatalf("ping %s through the tunnel: %v", tunInner[1].Addr(), err)
	}
	tunEcho := testutil.StartTCPEcho(t, doB, tunInner[1].Addr())
	marker = []byte(fmt.Sprintf("cnibench-wg-marker-tunnel-%d", time.Now().UnixNano()))
	pmtu, err := testutil.TCPRoundTrip(doA, tunEcho, bytes.Repeat(marker, 200))
	if err != nil {
		t.Fatalf("TCP through the tunnel: %v", err)
	}
	if pmtu != mtu {
		t.Errorf("path MTU through the tunnel %d, want %d", pmtu, mtu)
	}
	udpEcho := testutil.StartUDPEcho(t, doB, tunInner[1].Addr())
	if err := testutil.UDPRoundTripDF(doA, udpEcho, mtu); err != nil {
		t.Fatalf("UDP through the tunnel (a full %d-byte packet): %v", mtu, err)
	}
	if err := testutil.UDPRoundTripDF(doA, udpEcho, mtu+1); !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("UDP of %d bytes with DF: %v, want EMSGSIZE (tunnel MTU %d)", mtu+1, err, mtu)
	}
	frames := capt.stop()
	if anyContains(frames, marker) {
		t.Fatal("the marker sent through the tunnel appears in clear on the wire")
	}
	msgs, others := wireGuardMessages(frames, tunPort)
	if msgs[1] == 0 || msgs[2] == 0 || msgs[4] == 0 {
		t.Fatalf("wire frames: WireGuard messages by type %v, %d other frames; want handshake initiation (1), response (2) and data (4)", msgs, others)
	}
	t.Logf("wire during tunnel traffic: %d WireGuard data messages, %d/%d handshake messages, %d other frames",
		msgs[4], msgs[1], msgs[2], others)

	// Rough throughput of one TCP stream: a sanity figure for the log, not
	// a measurement (2 CPUs, one short run).
	const copyFor = 2 * time.Second
	tunBps, err := tcpCopy(do[1], do[0], tunInner[1].Addr(), copyFor)
	if err != nil {
		t.Fatalf("TCP copy through the tunnel: %v", err)
	}
	plainBps, err := tcpCopy(do[1], do[0], tunWire[1].Addr(), copyFor)
	if err != nil {
		t.Fatalf("TCP copy over the wire: %v", err)
	}
	t.Logf("rough throughput, one %s TCP stream: wireguard-go %.0f Mbit/s, plain veth %.0f Mbit/s (tunnel %.1f%% of plain)",
		copyFor, tunBps/1e6, plainBps/1e6, 100*tunBps/plainBps)

	// Closing removes the TUN devices and the sockets.
	for i, d := range devs {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("node %d: device not done 5 s after Close", i+1)
		}
		if _, err := h[i].LinkByName(tunDevice); err == nil {
			t.Errorf("node %d: %s still exists after Close", i+1, tunDevice)
		}
		if n := udpSockets(t, do[i], tunPort); n != 0 {
			t.Errorf("node %d: %d UDP sockets on port %d after Close", i+1, n, tunPort)
		}
	}
}

// setupWire joins the two namespaces with a veth pair carrying tunWire.
func setupWire(t *testing.T, h [2]*netlink.Handle, peerNS netns.NsHandle) {
	t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: tunVeth}, PeerName: tunVeth, PeerNamespace: netlink.NsFd(int(peerNS))}
	if err := h[0].LinkAdd(v); err != nil {
		t.Fatalf("create veth: %v", err)
	}
	for i := range 2 {
		l, err := h[i].LinkByName(tunVeth)
		if err != nil {
			t.Fatal(err)
		}
		if err := h[i].AddrAdd(l, &netlink.Addr{IPNet: prefixNet(tunWire[i])}); err != nil {
			t.Fatal(err)
		}
		if err := h[i].LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
}
