package proxies

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenConfigs are the configurations the golden files hold: each proxy
// with keep-alive on and off.
func goldenConfigs(dir string) map[string]ProxyConfig {
	base := ProxyConfig{Role: RoleNode, Listen: netip.MustParseAddrPort("198.18.0.1:15080"),
		Upstream: netip.MustParseAddrPort("198.19.2.10:8080"), Source: netip.MustParseAddr("198.19.1.254")}
	out := map[string]ProxyConfig{}
	for _, kind := range Proxies {
		for _, ka := range []bool{true, false} {
			c := base
			c.Kind, c.KeepAlive = kind, ka
			c.Dir = filepath.Join(dir, kind)
			name := kind + "-close"
			if ka {
				name = kind + "-keepalive"
			}
			out[name] = c
		}
	}
	return out
}

func TestRenderGolden(t *testing.T) {
	for name, c := range goldenConfigs("/tmp/cnibench-proxies-golden") {
		t.Run(name, func(t *testing.T) {
			got, err := c.Render()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".conf")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("configuration differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
		})
	}
}

func TestRenderKeepAlive(t *testing.T) {
	for name, c := range goldenConfigs("/d") {
		got, err := c.Render()
		if err != nil {
			t.Fatal(err)
		}
		s := string(got)
		var want, not []string
		switch {
		case c.Kind == HAProxy && c.KeepAlive:
			want, not = []string{"option http-keep-alive", "http-reuse always"}, []string{"http-server-close"}
		case c.Kind == HAProxy:
			want, not = []string{"option http-server-close"}, []string{"http-keep-alive\n", "http-reuse"}
		case c.KeepAlive:
			want, not = []string{"keepalive 64;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`}, []string{"keepalive_timeout 0;"}
		default:
			want, not = []string{"keepalive_timeout 0;"}, []string{"keepalive 64;", "proxy_http_version"}
		}
		for _, w := range want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: no %q", name, w)
			}
		}
		if src := map[string]string{HAProxy: " source 198.19.1.254\n", Nginx: "proxy_bind 198.19.1.254;"}[c.Kind]; !strings.Contains(s, src) {
			t.Errorf("%s: no %q", name, src)
		}
		for _, n := range not {
			if strings.Contains(s, n) {
				t.Errorf("%s: has %q", name, n)
			}
		}
		// Nothing of the host's: every path is the instance's.
		for _, line := range strings.Split(s, "\n") {
			if i := strings.Index(line, "/"); i >= 0 && strings.Contains(line, "_path") || strings.HasPrefix(strings.TrimSpace(line), "pid ") {
				if !strings.Contains(line, c.Dir+"/") {
					t.Errorf("%s: path outside %s: %q", name, c.Dir, line)
				}
			}
		}
	}
}

func TestRenderErrors(t *testing.T) {
	ok := ProxyConfig{Kind: HAProxy, Role: RoleNode, Listen: netip.MustParseAddrPort("127.0.0.1:1"),
		Upstream: netip.MustParseAddrPort("127.0.0.1:2"), Dir: "/tmp/x"}
	for _, tc := range []struct {
		name string
		mod  func(*ProxyConfig)
		want string
	}{
		{"kind", func(c *ProxyConfig) { c.Kind = "envoy" }, `unknown proxy "envoy"`},
		{"listen", func(c *ProxyConfig) { c.Listen = netip.AddrPort{} }, "no listen address"},
		{"listen port", func(c *ProxyConfig) { c.Listen = netip.MustParseAddrPort("127.0.0.1:0") }, "no listen address"},
		{"upstream", func(c *ProxyConfig) { c.Upstream = netip.AddrPort{} }, "no upstream address"},
		{"relative dir", func(c *ProxyConfig) { c.Dir = "x" }, "absolute path"},
		{"dir with space", func(c *ProxyConfig) { c.Dir = "/tmp/a b" }, "absolute path"},
		{"dir with semicolon", func(c *ProxyConfig) { c.Dir = "/tmp/a;b" }, "absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			if _, err := c.Render(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ok.Render(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestArgs(t *testing.T) {
	c := ProxyConfig{Kind: Nginx, Dir: "/d"}
	if got := strings.Join(c.Args(), " "); got != "-c /d/nginx.conf -p /d/ -e stderr -g daemon off;" {
		t.Errorf("nginx args %q", got)
	}
	c.Kind = HAProxy
	if got := strings.Join(c.Args(), " "); got != "-f /d/haproxy.cfg -db" {
		t.Errorf("haproxy args %q", got)
	}
}
