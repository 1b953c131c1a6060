package wireguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestProbeKernel: nil on a kernel with WireGuard, otherwise an error
// wrapping ErrNotSupported that says why (this machine has no module).
func TestProbeKernel(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	err := ProbeKernel()
	if err == nil {
		t.Log("kernel WireGuard available")
		return
	}
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("ProbeKernel() = %v, want nil or an error wrapping ErrNotSupported", err)
	}
	if err == ErrNotSupported || !strings.Contains(err.Error(), "wireguard link") {
		t.Fatalf("ProbeKernel() = %q: the reason is missing", err)
	}
	t.Logf("kernel WireGuard: %v", err)
}

// scratchNS returns a DoFunc and a netlink handle of a new scratch
// namespace, closed when the test ends.
func scratchNS(t *testing.T) (DoFunc, *netlink.Handle, netns.NsHandle) {
	t.Helper()
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(); ns.Close() })
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatalf("loopback up: %v", err)
	}
	return func(f func() error) error { return nsrun.Do(ns, f) }, h, ns
}

// TestSetupKernel configures a kernel device and reads it back with wgctrl;
// on a kernel without WireGuard it checks that SetupKernel says so and
// leaves nothing behind.
func TestSetupKernel(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	do, h, _ := scratchNS(t)
	cfg := testConfig(t)
	err := SetupKernel(do, cfg)
	if probe := ProbeKernel(); probe != nil {
		if !errors.Is(err, ErrNotSupported) {
			t.Fatalf("SetupKernel on a kernel without WireGuard = %v, want ErrNotSupported", err)
		}
		if _, lerr := h.LinkByName(cfg.Iface); lerr == nil {
			t.Fatalf("a failed SetupKernel left %s behind", cfg.Iface)
		}
		t.Skipf("checked the not-supported path only: %v", probe)
	}
	if err != nil {
		t.Fatal(err)
	}
	var dev *wgtypes.Device
	if err := do(func() error {
		c, err := wgctrl.New()
		if err != nil {
			return err
		}
		defer c.Close()
		dev, err = c.Device(cfg.Iface)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pub, _ := cfg.PrivateKey.PublicKey()
	if dev.PublicKey != wgtypes.Key(pub) || dev.ListenPort != cfg.ListenPort || len(dev.Peers) != 1 {
		t.Fatalf("device %+v does not match the config", dev)
	}
	p := dev.Peers[0]
	if p.PublicKey != wgtypes.Key(cfg.PeerPublicKey) || p.Endpoint.String() != cfg.PeerEndpoint.String() || len(p.AllowedIPs) != len(cfg.AllowedIPs) {
		t.Fatalf("peer %+v does not match the config", p)
	}
	l, err := h.LinkByName(cfg.Iface)
	if err != nil {
		t.Fatal(err)
	}
	if l.Attrs().MTU != cfg.MTU || l.Attrs().Flags&1 == 0 {
		t.Errorf("link %s: MTU %d (want %d), flags %v (want up)", cfg.Iface, l.Attrs().MTU, cfg.MTU, l.Attrs().Flags)
	}
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != cfg.Address.String() {
		t.Errorf("addresses of %s: %v, %v; want %s", cfg.Iface, addrs, err, cfg.Address)
	}
	if err := DeleteKernel(do, cfg.Iface); err != nil {
		t.Fatal(err)
	}
	if err := DeleteKernel(do, cfg.Iface); err != nil {
		t.Fatalf("deleting a missing device: %v", err)
	}
}

// TestProbeUserspace: this machine has /dev/net/tun, so the userspace
// implementation can run.
func TestProbeUserspace(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if err := ProbeUserspace(); err != nil {
		t.Fatalf("ProbeUserspace: %v", err)
	}
}
