package ipsec

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
)

// testUserspaceConfig is the initiating side of the test topology with a
// recognisable PSK.
func testUserspaceConfig(alg Algorithm) UserspaceConfig {
	psk := make([]byte, 32)
	for i := range psk {
		psk[i] = byte(0xa0 + i)
	}
	return UserspaceConfig{
		Local: netip.MustParseAddr("198.18.211.1"), Remote: netip.MustParseAddr("198.18.211.2"),
		LocalNet: netip.MustParsePrefix("198.19.1.0/24"), RemoteNet: netip.MustParsePrefix("198.19.2.0/24"),
		Alg: alg, PSK: psk, Initiate: true,
	}
}

func TestUserspaceConfGolden(t *testing.T) {
	compareGolden(t, filepath.Join("testdata", "strongswan.conf.golden"), strongswanConf("/tmp/cnibench-ipsec-test"))
	for _, alg := range Algorithms() {
		got, err := swanctlConf(testUserspaceConfig(alg))
		if err != nil {
			t.Fatal(err)
		}
		compareGolden(t, filepath.Join("testdata", "swanctl-"+alg.Label()+".conf.golden"), got)
	}
}

// TestSwanctlConfSides: both sides name the same secret (ids sorted), each
// its own addresses and traffic selectors.
func TestSwanctlConfSides(t *testing.T) {
	a := testUserspaceConfig(AESGCM128)
	b := a
	b.Local, b.Remote, b.LocalNet, b.RemoteNet, b.Initiate = a.Remote, a.Local, a.RemoteNet, a.LocalNet, false
	ca, err := swanctlConf(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := swanctlConf(b)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(c []byte) string { return string(c[bytes.Index(c, []byte("secrets {")):]) }
	if secret(ca) != secret(cb) {
		t.Errorf("the two sides' secrets differ:\n%s\n%s", secret(ca), secret(cb))
	}
	for _, want := range []string{"local_addrs = 198.18.211.2", "local_ts = 198.19.2.0/24", "remote_ts = 198.19.1.0/24", "esp_proposals = aes128gcm16\n"} {
		if !strings.Contains(string(cb), want) {
			t.Errorf("responder config lacks %q", want)
		}
	}
}

func TestUserspaceConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*UserspaceConfig)
		want   string
	}{
		{"ok", func(*UserspaceConfig) {}, ""},
		{"ok cbc", func(c *UserspaceConfig) { c.Alg = AESCBCHMACSHA256 }, ""},
		{"ok dir", func(c *UserspaceConfig) { c.Dir = "/tmp/x" }, ""},
		{"unknown alg", func(c *UserspaceConfig) { c.Alg = "x" }, "unknown ESP algorithm"},
		{"short psk", func(c *UserspaceConfig) { c.PSK = c.PSK[:16] }, "PSK"},
		{"bad name", func(c *UserspaceConfig) { c.Name = "a b" }, "name"},
		{"relative dir", func(c *UserspaceConfig) { c.Dir = "tmp/x" }, "absolute"},
		{"dir with brace", func(c *UserspaceConfig) { c.Dir = "/tmp/{x" }, "braces"},
		{"long dir", func(c *UserspaceConfig) { c.Dir = "/" + strings.Repeat("d", maxDirLen) }, "at most"},
		{"overlapping nets", func(c *UserspaceConfig) { c.RemoteNet = c.LocalNet }, "overlap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testUserspaceConfig(AESGCM128)
			tc.change(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
