package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestLeftOut(t *testing.T) {
	cases := []struct {
		name   string
		config map[string]string
		want   []string // substrings, one per line, in order; nil: no list
	}{
		{"standard run", map[string]string{"profile": "standard", "tests": "tcp_rr", "flows": "1", "mtus": "1500"}, nil},
		{"quick scenario", map[string]string{"profile": "quick", "scenario": "egress-filter", "tests": "tcp_rr", "flows": "1", "mtus": "1500"}, nil},
		{"quick, everything", map[string]string{"profile": "quick", "tests": strings.Join(StandardTests, ","), "flows": "1,32", "mtus": "1500,9000"}, nil},
		{"quick profile", map[string]string{"profile": "quick", "tests": "tcp_stream,tcp_rr,tcp_crr", "flows": "1", "mtus": "1500"}, []string{
			"tests udp_stream, http, tcp_rr_loaded: cnibench suite --tests udp_stream,http,tcp_rr_loaded",
			"32 flows (tcp tests): cnibench suite --tests tcp_stream,tcp_rr,tcp_crr --flows 32",
			"MTU 9000 (tcp_stream and tcp_rr at 1 flow): cnibench suite --tests tcp_stream,tcp_rr --flows 1 --mtu 1500,9000",
			"cnibench suite --profile standard",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := LeftOut(c.config)
			if len(got) != len(c.want) {
				t.Fatalf("got %d lines %q, want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d: %q does not contain %q", i, got[i], w)
				}
			}
		})
	}
}

// A quick run's summary lists what it left out, in every format; another
// run's does not.
func TestLeftOutInSummary(t *testing.T) {
	for _, profile := range []string{"quick", "standard"} {
		s := loadFixture(t, "results-evidence.json")
		s.Config = map[string]string{"profile": profile, "tests": "tcp_stream,tcp_rr,tcp_crr", "flows": "1", "mtus": "1500"}
		var md, txt bytes.Buffer
		if err := Markdown(&md, s); err != nil {
			t.Fatal(err)
		}
		if err := Text(&txt, s, false); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"markdown": strings.ReplaceAll(md.String(), `\_`, "_"), "text": txt.String()} {
			has := strings.Contains(out, "cnibench suite --tests udp_stream,http,tcp_rr_loaded")
			if has != (profile == "quick") {
				t.Errorf("%s profile, %s report: lists what was left out = %v", profile, name, has)
			}
		}
	}
}
