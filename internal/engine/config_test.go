package engine

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	base := Config{Target: "127.0.0.1", Test: TCPRR}
	tests := []struct {
		name  string
		mut   func(*Config)
		field string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"port", func(c *Config) { c.Target = "10.0.0.1:9000" }, ""},
		{"ipv6", func(c *Config) { c.Target = "[::1]:9000" }, ""},
		{"bad test", func(c *Config) { c.Test = "tcp_maerts" }, "--test"},
		{"no target", func(c *Config) { c.Target = "" }, "--target"},
		{"bad port", func(c *Config) { c.Target = "h:99999" }, "--target"},
		{"short", func(c *Config) { c.Duration = time.Millisecond }, "--duration"},
		{"flows 0", func(c *Config) { c.Flows = -1 }, "--flows"},
		{"flows 257", func(c *Config) { c.Flows = 257 }, "--flows"},
		{"http 1000 clients", func(c *Config) { c.Test = HTTP; c.Flows = 1000 }, ""},
		{"repeat", func(c *Config) { c.Repeat = -2 }, "--repeat"},
		{"req", func(c *Config) { c.ReqSize = MaxMsgSize + 1 }, "--request-size"},
		{"udp big", func(c *Config) { c.Test = UDPRR; c.ReqSize = 70000 }, "--request-size"},
		{"udp stream tiny", func(c *Config) { c.Test = UDPStream; c.MsgSize = 4 }, "--message-size"},
		{"rate", func(c *Config) { c.Rate = -1 }, "--rate"},
		{"path", func(c *Config) { c.Test = HTTP; c.HTTPPath = "x y" }, "--http-path"},
		{"url", func(c *Config) { c.Test = HTTP; c.Target = ""; c.URL = "http://127.0.0.1:8080/a" }, ""},
		{"url and target", func(c *Config) { c.Test = HTTP; c.URL = "http://127.0.0.1/" }, "--target"},
		{"url not http test", func(c *Config) { c.Target = ""; c.URL = "http://127.0.0.1/" }, "--url"},
		{"url scheme", func(c *Config) { c.Test = HTTP; c.Target = ""; c.URL = "https://x/" }, "--url"},
		{"udp handshake", func(c *Config) { c.Test = UDPStream; c.UDPHandshake = true }, ""},
		{"udp handshake not udp_stream", func(c *Config) { c.UDPHandshake = true }, "--udp-handshake"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.mut(&c)
			err := Defaults(c).Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("valid config rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.field+" ") {
				t.Fatalf("got %v, want an error naming %s", err, tt.field)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := Defaults(Config{Test: UDPStream})
	// udp_stream's datagram size is left to the path MTU (Client.Run);
	// 5 repeats so that two default runs can be compared.
	if c.MsgSize != 0 || c.Flows != 1 || c.Repeat != 5 || c.Duration != 10*time.Second {
		t.Fatalf("udp_stream defaults: %+v", c)
	}
	if h := Defaults(Config{Test: HTTP}); h.Flows != 32 || h.HTTPBody != 1024 || h.HTTPPath != "/" {
		t.Fatalf("http defaults: %+v", h)
	}
	if u := Defaults(Config{Test: HTTP, URL: "http://h/p?q=1"}); u.HTTPPath != "/p?q=1" {
		t.Fatalf("url path: %q", u.HTTPPath)
	}
	m := Defaults(Config{Test: TCPRR, Target: "x"}).Map()
	for _, k := range []string{"test", "target", "duration", "flows", "request_size", "busy_poll"} {
		if m[k] == "" {
			t.Errorf("config map lacks %s", k)
		}
	}
}
