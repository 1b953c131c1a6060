package compare

import (
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func TestParseRules(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rule
		err  string
	}{
		{in: "worse>5%", want: Rule{Worse: true, Up: true, Limit: 5}},
		{in: "slower>2.5%", want: Rule{Worse: true, Up: true, Limit: 2.5}},
		{in: "default", want: Rule{Worse: true, Up: true, Limit: 5}},
		{in: "latency_us_p99>+10%", want: Rule{Metric: "latency_us_p99", Up: true, Limit: 10}},
		{in: "latency_us_p99>10%", want: Rule{Metric: "latency_us_p99", Up: true, Limit: 10}},
		{in: "trans_per_sec<-5%", want: Rule{Metric: "trans_per_sec", Limit: 5}},
		{in: "trans_per_sec < 5%", want: Rule{Metric: "trans_per_sec", Limit: 5}},
		{in: "cpu_share_netfilter>+2pp", want: Rule{Metric: "cpu_share_netfilter", Up: true, Limit: 2, PP: true}},
		{in: "missing", want: Rule{Missing: true}},
		{in: "worse<5%", err: "worse takes a magnitude"},
		{in: "trans_per_sec>-5%", err: "the sign contradicts"},
		{in: "trans_per_sec>+5pp", err: "pp (percentage points) is for CPU-profile shares"},
		{in: "cpu_share_bpf>+5%", err: "write pp"},
		{in: "faster", err: "not a rule"},
		{in: "trans_per_sec>5", err: "not a rule"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			rs, err := ParseRules([]string{tc.in})
			if tc.err != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--fail-on") {
					t.Fatalf("err %v, want a UsageError naming --fail-on with %q", err, tc.err)
				}
				return
			}
			if err != nil || len(rs) != 1 {
				t.Fatalf("rules %v, err %v", rs, err)
			}
			got := rs[0]
			got.Text = ""
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	rs, err := ParseRules([]string{"worse>5%,missing", "latency_us_p99>+10%"})
	if err != nil || len(rs) != 3 {
		t.Errorf("comma-separated and repeated: %v %v", rs, err)
	}
	if _, err := ParseRules([]string{" , "}); err == nil {
		t.Error("no rule: want an error")
	}
}

// gated compares one cell's OLD and NEW values of metric and applies rules.
func gated(t *testing.T, metric string, old, new []float64, rules ...string) *GateResult {
	t.Helper()
	l := map[string]string{"test": "tcp_rr", "flows": "1", "path": "cross-node", "datapath": "veth-routing"}
	a := set(run(l, metric, old...), run(map[string]string{"test": "tcp_rr", "flows": "32"}, metric, 1, 1, 1, 1, 1))
	b := set(run(l, metric, new...))
	r, err := Compare([]Input{{"old.json", a}, {"new.json", b}}, Options{Metrics: []string{metric}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	g, err := r.Gate(GateOptions{Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGateVerdicts(t *testing.T) {
	base := []float64{100, 101, 99, 100.5, 99.5}
	scale := func(f float64) []float64 {
		out := make([]float64, len(base))
		for i, v := range base {
			out[i] = v * f
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		metric   string
		new      []float64
		rules    []string
		fail     bool
		unjudged int
	}{
		{"rate down 10 %, worse>5%", result.TransPerSec, scale(0.9), []string{"worse>5%"}, true, 0},
		{"rate down 3 %, worse>5%: significant but within", result.TransPerSec, scale(0.97), []string{"worse>5%"}, false, 0},
		{"rate up 10 %, worse>5%: an improvement", result.TransPerSec, scale(1.1), []string{"worse>5%"}, false, 0},
		{"latency up 10 %, worse>5%", result.LatencyUsP99, scale(1.1), []string{"worse>5%"}, true, 0},
		{"latency down 10 %, worse>5%", result.LatencyUsP99, scale(0.9), []string{"worse>5%"}, false, 0},
		{"rate up 10 %, metric rule >+5%", result.TransPerSec, scale(1.1), []string{"trans_per_sec>+5%"}, true, 0},
		{"rate down 10 %, metric rule <-12%", result.TransPerSec, scale(0.9), []string{"trans_per_sec<-12%"}, false, 0},
		// The median is 10 % down but one repeat overlaps: the interval
		// reaches past -5 %, so the gate does not fail.
		{"noisy", result.TransPerSec, []float64{90, 110, 85, 90, 95}, []string{"worse>5%"}, false, 0},
		{"two repeats: no verdict", result.TransPerSec, []float64{90, 90}, []string{"worse>5%"}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gated(t, tc.metric, base, tc.new, tc.rules...)
			if g.Failed() != tc.fail {
				t.Errorf("failed=%v, want %v (failures %+v)", g.Failed(), tc.fail, g.Failures)
			}
			if len(g.Unjudged) != tc.unjudged {
				t.Errorf("%d without a verdict, want %d: %+v", len(g.Unjudged), tc.unjudged, g.Unjudged)
			}
			for _, f := range g.Failures {
				if !(f.Lo <= f.Change && f.Change <= f.Hi) {
					t.Errorf("change %g outside its interval [%g, %g]", f.Change, f.Lo, f.Hi)
				}
			}
		})
	}
}

func TestGateMissingAndUnknownMetric(t *testing.T) {
	l := map[string]string{"test": "tcp_rr", "flows": "1"}
	a := set(run(l, result.TransPerSec, 1, 2, 3, 4, 5), run(map[string]string{"test": "tcp_rr", "flows": "32"}, result.TransPerSec, 1, 2, 3, 4, 5))
	b := set(run(l, result.TransPerSec, 1, 2, 3, 4, 5))
	r, err := Compare([]Input{{"old.json", a}, {"new.json", b}}, Options{Metrics: []string{result.TransPerSec}})
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := ParseRules([]string{"worse>5%,missing"})
	g, err := r.Gate(GateOptions{Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Failures) != 1 || g.Failures[0].Labels["flows"] != "32" || g.Failures[0].Rule != "missing" {
		t.Errorf("failures %+v, want the 32-flow cell missing", g.Failures)
	}
	rs, _ = ParseRules([]string{"latency_us_p99>+5%"})
	var ue *UsageError
	if _, err := r.Gate(GateOptions{Rules: rs}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "add it to --metrics") {
		t.Errorf("unknown rule metric: err %v", err)
	}
}

func TestHostNotes(t *testing.T) {
	a := set(run(map[string]string{"test": "tcp_rr"}, result.TransPerSec, 1, 2, 3, 4, 5))
	b := set(run(map[string]string{"test": "tcp_rr"}, result.TransPerSec, 1, 2, 3, 4, 5))
	a.Host = result.Host{CPUModel: "A", Cores: 2, Kernel: "6.18"}
	b.Host = result.Host{CPUModel: "B", Cores: 2, Kernel: "6.18"}
	b.Interrupted = true
	r, err := Compare([]Input{{"old.json", a}, {"new.json", b}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.HostNotes, "\n")
	for _, want := range []string{`old.json and new.json ran on different machines (CPU "A" vs "B")`, "new.json is from an interrupted run"} {
		if !strings.Contains(got, want) {
			t.Errorf("notes %q lack %q", got, want)
		}
	}
}

// FuzzParseRules: any --fail-on text parses into rules or fails with a
// one-line usage error naming --fail-on; it never panics.
func FuzzParseRules(f *testing.F) {
	for _, s := range []string{"worse>5%", "default", "missing", "trans_per_sec<-5%,latency_us_p99>+10%", "cpu_share_bpf>+2pp", "x>1e9%", ">%", "slower>5.5.5%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseRules([]string{s})
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--fail-on") || strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("error %q: want a one-line UsageError naming --fail-on", err)
			}
			return
		}
		for _, r := range rs {
			if r.Limit < 0 || (!r.Missing && !r.Worse && r.Metric == "") {
				t.Fatalf("rule %+v from %q", r, s)
			}
		}
	})
}
