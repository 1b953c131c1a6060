package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func planOptions() options {
	return options{rounds: planRounds, duration: planDuration, warmup: planWarmup, pause: 500 * time.Millisecond,
		httpClients: 1000, httpBody: 1024, envs: "loopback", tests: "tcp_rr", pin: "none", goBin: "go"}
}

func TestRowKind(t *testing.T) {
	for _, tc := range []struct{ test, pin, want string }{
		{"tcp_rr", "none", KindGoal},
		{"http", "none", KindGoal},
		{"tcp_rr", "same", KindStretch},
		{"tcp_crr", "same", KindStretch},
		{"tcp_stream", "same", KindExploratory},
		{"tcp_rr", "split", KindExploratory},
	} {
		if got := rowKind(tc.test, tc.pin); got != tc.want {
			t.Errorf("rowKind(%s, %s) = %s, want %s", tc.test, tc.pin, got, tc.want)
		}
	}
}

func TestPlanIsValidAndFollowed(t *testing.T) {
	o := planOptions()
	if err := o.validate(); err != nil {
		t.Fatalf("the plan's own settings do not validate: %v", err)
	}
	if d := o.deviations(); len(d) != 0 {
		t.Errorf("deviations of the plan = %v", d)
	}
	if planRounds%2 != 0 {
		t.Errorf("planRounds %d is odd: each order must occur equally often", planRounds)
	}
	if _, _, err := signedRankK(planRounds, planConfidence); err != nil {
		t.Errorf("no %v interval with %d rounds: %v", planConfidence, planRounds, err)
	}
	if _, _, err := signedRankK(minRounds, planConfidence); err != nil {
		t.Errorf("minRounds %d gives no interval: %v", minRounds, err)
	}
	o.rounds = 8
	if d := o.deviations(); len(d) != 1 || !strings.Contains(d[0], "-rounds 8") {
		t.Errorf("deviations with -rounds 8 = %v", d)
	}
	if !strings.Contains(planHeader(o), "does not follow the plan") {
		t.Error("the header does not say that the run deviates from the plan")
	}
	o.rounds = minRounds - 1
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "-rounds") {
		t.Errorf("validate with -rounds %d: %v, want an error naming -rounds", o.rounds, err)
	}
}

// fakeComparison has n rounds with the given ratios (peer 1000/s).
func fakeComparison(env, test string, rs []float64) *ComparisonResult {
	c := comparisonByTest(test)
	res := &ComparisonResult{Env: env, Test: test, Peer: c.Peer, PeerTest: c.PeerTest, Unit: c.Unit, Target: c.Target,
		LoadBefore: "1.00 1.00 1.00", LoadAfter: "1.10 1.00 1.00"}
	for i, r := range rs {
		a, b := 1000*r, 1000.0
		m := map[string]float64{"latency_us_p50": 50, "latency_us_p99": 90}
		res.Trials = append(res.Trials,
			Trial{Round: i + 1, Side: "cnibench", Order: 1 + i%2, Value: &a, Metrics: m},
			Trial{Round: i + 1, Side: c.Peer, Order: 2 - i%2, Value: &b, Metrics: m})
	}
	return res
}

func TestFinishVerdicts(t *testing.T) {
	met := []float64{1.02, 0.99, 1.05, 1.00, 1.03, 0.98, 1.04, 1.01, 1.02, 1.00, 0.99, 1.03}
	close := []float64{0.90, 1.00, 0.93, 0.97, 0.95, 0.99, 0.91, 0.96, 0.94, 1.01, 0.92, 0.98}
	missed := []float64{0.85, 0.88, 0.86, 0.90, 0.87, 0.84, 0.89, 0.86, 0.88, 0.85, 0.87, 0.86}
	for _, tc := range []struct {
		name   string
		mod    func(*options)
		rs     []float64
		test   string
		kind   string
		result string
	}{
		{"met", nil, met, "tcp_rr", KindGoal, VerdictMet},
		{"inconclusive", nil, close, "tcp_crr", KindGoal, VerdictInconclusive},
		{"missed", nil, missed, "tcp_rr", KindGoal, VerdictMissed},
		{"stretch", func(o *options) { o.pin = "same" }, missed, "tcp_crr", KindStretch, VerdictMissed},
		{"off plan", func(o *options) { o.rounds = 6 }, met[:6], "tcp_rr", KindExploratory, VerdictMet},
		{"too few rounds", nil, met[:5], "tcp_rr", KindGoal, VerdictInconclusive},
	} {
		o := planOptions()
		if tc.mod != nil {
			tc.mod(&o)
		}
		r := &Report{Comparisons: []*ComparisonResult{fakeComparison("loopback", tc.test, tc.rs)}}
		r.finish(o)
		c := r.Comparisons[0]
		if c.Kind != tc.kind || c.Verdict != tc.result {
			t.Errorf("%s: kind %s verdict %s (CI %+v), want %s %s", tc.name, c.Kind, c.Verdict, c.CI, tc.kind, tc.result)
		}
		if tc.name == "too few rounds" && (c.CI != nil || !strings.Contains(strings.Join(c.Warnings, ";"), "no interval")) {
			t.Errorf("%s: CI %+v warnings %v, want no CI and a warning", tc.name, c.CI, c.Warnings)
		}
	}
}

func TestMarkdownGolden(t *testing.T) {
	o := planOptions()
	start := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	r := &Report{
		Schema: "cnibench/peerbench/v2", Start: start, End: start.Add(20 * time.Minute),
		Host:   Host{Hostname: "vm", OS: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.18", CPUModel: "AMD EPYC", Cores: 2, MemBytes: 24 << 30, LoadAvg: "0.50 0.40 0.30"},
		Tools:  map[string]string{"netperf": "Netperf version 2.7.1", "go": "go1.26"},
		Config: map[string]string{"rounds": "12", "duration": "5s", "warmup": "1s", "http_clients": "1000", "http_body": "1024", "pin": "none"},
		Plan:   planHeader(o),
		Comparisons: []*ComparisonResult{
			fakeComparison("loopback", "tcp_rr", []float64{1.02, 0.99, 1.05, 1.00, 1.03, 0.98, 1.04, 1.01, 1.02, 1.00, 0.99, 1.03}),
			fakeComparison("loopback", "tcp_crr", []float64{0.90, 1.00, 0.93, 0.97, 0.95, 0.99, 0.91, 0.96, 0.94, 1.01, 0.92, 0.98}),
		},
	}
	r.finish(o)
	var b strings.Builder
	r.writeMarkdown(&b)
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if b.String() != string(want) {
		os.WriteFile(golden+".got", []byte(b.String()), 0o644)
		t.Errorf("markdown differs from %s (got in %s.got; go test -update to accept)", golden, golden)
	}
}
