package wireguard

import (
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun/tuntest"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

func TestUAPI(t *testing.T) {
	cfg := testConfig(t)
	want := "private_key=a814f1c170b67c32c62e39246ebd2ce530df4c76900a8a8896ad8913a3f02759\n" +
		"listen_port=51820\n" +
		"replace_peers=true\n" +
		"public_key=5eef501915b3f0c5915f3957cfb45b2cd81456e98d24558908168aed59b40256\n" +
		"endpoint=198.18.0.2:51820\n" +
		"replace_allowed_ips=true\n" +
		"allowed_ip=198.19.2.0/24\n" +
		"allowed_ip=10.200.0.2/32\n"
	if got := cfg.UAPI(); got != want {
		t.Errorf("UAPI():\n%s\nwant:\n%s", got, want)
	}

	cfg.PeerEndpoint = netip.MustParseAddrPort("[2001:db8::2]:51820")
	cfg.PersistentKeepalive = 25 * time.Second
	cfg.ListenPort = 0
	cfg.AllowedIPs = cfg.AllowedIPs[:1]
	want = "private_key=a814f1c170b67c32c62e39246ebd2ce530df4c76900a8a8896ad8913a3f02759\n" +
		"listen_port=0\n" +
		"replace_peers=true\n" +
		"public_key=5eef501915b3f0c5915f3957cfb45b2cd81456e98d24558908168aed59b40256\n" +
		"endpoint=[2001:db8::2]:51820\n" +
		"persistent_keepalive_interval=25\n" +
		"replace_allowed_ips=true\n" +
		"allowed_ip=198.19.2.0/24\n"
	if got := cfg.UAPI(); got != want {
		t.Errorf("UAPI() with IPv6 endpoint and keepalive:\n%s\nwant:\n%s", got, want)
	}
}

func TestWgtypesConfig(t *testing.T) {
	cfg := testConfig(t)
	cfg.PersistentKeepalive = 25 * time.Second
	got := cfg.wgtypesConfig()
	priv, port, ka := wgtypes.Key(cfg.PrivateKey), 51820, 25*time.Second
	want := wgtypes.Config{
		PrivateKey:   &priv,
		ListenPort:   &port,
		ReplacePeers: true,
		Peers: []wgtypes.PeerConfig{{
			PublicKey:                   wgtypes.Key(cfg.PeerPublicKey),
			Endpoint:                    &net.UDPAddr{IP: net.IPv4(198, 18, 0, 2).To4(), Port: 51820},
			PersistentKeepaliveInterval: &ka,
			ReplaceAllowedIPs:           true,
			AllowedIPs: []net.IPNet{
				{IP: net.IPv4(198, 19, 2, 0).To4(), Mask: net.CIDRMask(24, 32)},
				{IP: net.IPv4(10, 200, 0, 2).To4(), Mask: net.CIDRMask(32, 32)},
			},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("wgtypesConfig():\n%+v\nwant\n%+v", got, want)
	}
	cfg.PeerEndpoint, cfg.PersistentKeepalive = netip.AddrPort{}, 0
	got = cfg.wgtypesConfig()
	if p := got.Peers[0]; p.Endpoint != nil || p.PersistentKeepaliveInterval != nil {
		t.Errorf("unset endpoint/keepalive translated as %v / %v, want nil (left as is)", p.Endpoint, p.PersistentKeepaliveInterval)
	}
}

// wireguard-go itself accepts the rendered configuration and reports it
// back (a device that is never up opens no socket).
func TestUAPIAcceptedByWireguardGo(t *testing.T) {
	cfg := testConfig(t)
	cfg.PersistentKeepalive = 25 * time.Second
	dev := device.NewDevice(tuntest.NewChannelTUN().TUN(), conn.NewDefaultBind(), deviceLogger(nil, cfg.Iface))
	defer dev.Close()
	if err := dev.IpcSet(cfg.UAPI()); err != nil {
		t.Fatalf("IpcSet: %v", err)
	}
	state, err := dev.IpcGet()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"private_key=" + cfg.PrivateKey.hex(),
		"listen_port=51820",
		"public_key=" + cfg.PeerPublicKey.hex(),
		"endpoint=198.18.0.2:51820",
		"persistent_keepalive_interval=25",
		"allowed_ip=198.19.2.0/24",
		"allowed_ip=10.200.0.2/32",
	} {
		if !strings.Contains(state, want+"\n") {
			t.Errorf("device state lacks %q:\n%s", want, state)
		}
	}
	// Setting it again replaces rather than adds.
	cfg.AllowedIPs = cfg.AllowedIPs[:1]
	if err := dev.IpcSet(cfg.UAPI()); err != nil {
		t.Fatalf("second IpcSet: %v", err)
	}
	if state, _ = dev.IpcGet(); strings.Contains(state, "10.200.0.2/32") || strings.Count(state, "public_key=") != 1 {
		t.Errorf("reconfiguration did not replace the peer:\n%s", state)
	}
}
