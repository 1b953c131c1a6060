package wireguard

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestOverheadAndPodMTU(t *testing.T) {
	if got := Overhead(false); got != 60 {
		t.Errorf("Overhead(IPv4) = %d, want 20+8+32 = 60", got)
	}
	if got := Overhead(true); got != 80 {
		t.Errorf("Overhead(IPv6) = %d, want 40+8+32 = 80", got)
	}
	if DefaultMTU != 1500-Overhead(true) {
		t.Errorf("DefaultMTU %d, want wireguard-go's 1420", DefaultMTU)
	}
	for _, c := range []struct{ wire, want int }{
		{1500, 1440}, // Calico's IPv4 WireGuard MTU on a 1500-byte network
		{9000, 8940},
		{65535, 65475},
		{636, 576},
		{635, 0}, // too small for an IPv4 tunnel
		{0, 0},
	} {
		if got := PodMTU(c.wire); got != c.want {
			t.Errorf("PodMTU(%d) = %d, want %d", c.wire, got, c.want)
		}
	}
}

// testConfig is a valid config with fixed keys.
func testConfig(t testing.TB) Config {
	t.Helper()
	priv, err := ParseKey("qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=")
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ParseKey("Xu9QGRWz8MWRXzlXz7RbLNgUVumNJFWJCBaK7Vm0AlY=")
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Iface:         "wg0",
		PrivateKey:    priv,
		PeerPublicKey: peer,
		ListenPort:    51820,
		PeerEndpoint:  netip.MustParseAddrPort("198.18.0.2:51820"),
		AllowedIPs:    []netip.Prefix{netip.MustParsePrefix("198.19.2.0/24"), netip.MustParsePrefix("10.200.0.2/32")},
		Address:       netip.MustParsePrefix("10.200.0.1/24"),
		MTU:           1440,
	}
}

func TestValidate(t *testing.T) {
	if err := testConfig(t).Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	ownPub, err := testConfig(t).PrivateKey.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no iface", func(c *Config) { c.Iface = "" }, "iface: missing"},
		{"long iface", func(c *Config) { c.Iface = "wireguard-tunnel0" }, "iface: "},
		{"slash", func(c *Config) { c.Iface = "wg/0" }, "iface: "},
		{"no private key", func(c *Config) { c.PrivateKey = Key{} }, "private_key: missing"},
		{"no peer key", func(c *Config) { c.PeerPublicKey = Key{} }, "peer_public_key: missing"},
		{"own key as peer", func(c *Config) { c.PeerPublicKey = ownPub }, "peer_public_key: is this node's own"},
		{"port", func(c *Config) { c.ListenPort = 70000 }, "listen_port: 70000"},
		{"endpoint port 0", func(c *Config) { c.PeerEndpoint = netip.MustParseAddrPort("198.18.0.2:0") }, "peer_endpoint: "},
		{"endpoint unspecified", func(c *Config) { c.PeerEndpoint = netip.MustParseAddrPort("0.0.0.0:51820") }, "peer_endpoint: "},
		{"no allowed ips", func(c *Config) { c.AllowedIPs = nil }, "allowed_ips: missing"},
		{"host bits", func(c *Config) { c.AllowedIPs[1] = netip.MustParsePrefix("10.200.0.2/24") }, "allowed_ips[1]: 10.200.0.2/24 has host bits set (want 10.200.0.0/24)"},
		{"small mtu", func(c *Config) { c.MTU = 100 }, "mtu: 100"},
		{"keepalive", func(c *Config) { c.PersistentKeepalive = 1500 * time.Millisecond }, "persistent_keepalive: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t)
			c.mod(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want an error starting %q", err, c.want)
			}
		})
	}
	// Optional fields.
	cfg := testConfig(t)
	cfg.PeerEndpoint, cfg.Address, cfg.MTU, cfg.ListenPort = netip.AddrPort{}, netip.Prefix{}, 0, 0
	if err := cfg.Validate(); err != nil {
		t.Errorf("minimal config: %v", err)
	}
	if cfg.mtu() != DefaultMTU {
		t.Errorf("mtu() = %d with MTU 0, want %d", cfg.mtu(), DefaultMTU)
	}
}
