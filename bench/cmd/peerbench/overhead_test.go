package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/profile"
	pprof "github.com/google/pprof/profile"
)

func TestOverheadSelection(t *testing.T) {
	cs := comparisonsByTest(overheadTest)
	if len(cs) != 2 || cs[0].Test != "tcp_rr" || cs[1].Test != "tcp_stream" {
		t.Fatalf("comparisonsByTest(%s) = %+v, want tcp_rr then tcp_stream", overheadTest, cs)
	}
	for _, c := range cs {
		if !c.Overhead || c.Peer != overheadB || c.Target != overheadTarget || c.Name() == c.Test {
			t.Errorf("%s: overhead %v peer %q target %v name %q", c.Test, c.Overhead, c.Peer, c.Target, c.Name())
		}
	}
	if cs[0].Metric != "trans_per_sec" || cs[1].Metric != "throughput_rx_bits_per_sec" {
		t.Errorf("metrics %s, %s", cs[0].Metric, cs[1].Metric)
	}
	// The peer comparisons of the same tests are untouched.
	if c := comparisonByTest("tcp_rr"); c.Peer != "netperf" || c.Overhead {
		t.Errorf("comparisonByTest(tcp_rr) = %+v, want netperf's", c)
	}
	if c := comparisonByTest("tcp_stream"); c.Peer != "iperf3" || c.Overhead {
		t.Errorf("comparisonByTest(tcp_stream) = %+v, want iperf3's", c)
	}
	// Not in the default selection.
	def := "tcp_rr,tcp_crr,tcp_stream,http"
	for _, t2 := range splitList(def) {
		for _, c := range comparisonsByTest(t2) {
			if c.Overhead {
				t.Errorf("default -tests %s selects overhead comparison %s", def, c.Name())
			}
		}
	}
	// Only the programs of every peer comparison: no peer, no netperf.
	if got := namesOf(programsNeeded([]string{overheadTest}, "none")); !slices.Equal(got, []string{"ip", "ss", "sysctl"}) {
		t.Errorf("programsNeeded(%s) = %v", overheadTest, got)
	}
	if need := peersNeeded([]string{overheadTest}); need["netperf"] || need["iperf3"] {
		t.Errorf("peersNeeded(%s) = %v", overheadTest, need)
	}
}

func TestOverheadValidateAndFiles(t *testing.T) {
	for _, tc := range []struct {
		tests, pin, wantErr, wantBase string
	}{
		{tests: overheadTest, pin: "none", wantBase: "bench/results/peerbench-profile-overhead"},
		{tests: overheadTest, pin: "same", wantBase: "bench/results/peerbench-profile-overhead-pin-same"},
		{tests: "tcp_rr," + overheadTest, pin: "none", wantErr: "-tests tcp_rr,profile-overhead: profile-overhead runs alone"},
		{tests: overheadTest + ",tcp_stream", pin: "none", wantErr: "runs alone"},
		{tests: "egress-load", pin: "same", wantBase: "bench/results/peerbench-egress"},
		{tests: "tcp_rr", pin: "none", wantBase: "bench/results/peerbench"},
	} {
		o := planOptions()
		o.tests, o.pin = tc.tests, tc.pin
		err := o.validate()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("validate -tests %s: %v, want %q", tc.tests, err, tc.wantErr)
			}
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "CPUs") { // -pin on a 1-CPU machine
			t.Errorf("validate -tests %s -pin %s: %v", tc.tests, tc.pin, err)
		}
		if got := defaultBase(o); got != tc.wantBase {
			t.Errorf("defaultBase(-tests %s -pin %s) = %s, want %s", tc.tests, tc.pin, got, tc.wantBase)
		}
	}
}

// The two sides run the same command but for --cpu-profile FILE.
func TestCnibenchArgs(t *testing.T) {
	o := planOptions()
	lo := &Env{Name: "loopback", ServerIP: "127.0.0.1"}
	veth := &Env{Name: "veth", ServerIP: ipServer, ServerNS: nsServer, ClientNS: nsClient}
	base := []string{"/t/cnibench", "run", "--test", "tcp_rr", "--duration", "5s", "--warmup", "1s", "--repeat", "1", "--format", "json", "-q"}
	for _, tc := range []struct {
		name    string
		env     *Env
		c       *Comparison
		profile string
		want    []string
	}{
		{"unprofiled tcp_rr", lo, overheadComparisons[0], "",
			append(slices.Clone(base), "--target", "127.0.0.1:22870")},
		{"profiled tcp_rr", lo, overheadComparisons[0], "/tmp/x/p.pb.gz",
			append(slices.Clone(base), "--target", "127.0.0.1:22870", "--cpu-profile", "/tmp/x/p.pb.gz")},
		{"profiled tcp_stream, veth", veth, overheadComparisons[1], "/tmp/x/q.pb.gz",
			[]string{"/t/cnibench", "run", "--test", "tcp_stream", "--duration", "5s", "--warmup", "1s", "--repeat", "1", "--format", "json", "-q",
				"--target", "198.18.0.1:22870", "--cpu-profile", "/tmp/x/q.pb.gz"}},
		{"http vs hey (unchanged)", lo, comparisonByTest("http"), "",
			[]string{"/t/cnibench", "run", "--test", "http", "--duration", "5s", "--warmup", "1s", "--repeat", "1", "--format", "json", "-q",
				"--url", "http://127.0.0.1:22880/", "--flows", "1000"}},
	} {
		if got := cnibenchArgs(o, "/t/cnibench", tc.env, tc.c, tc.profile); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// fakeOverhead is a profile-overhead comparison whose profiled side runs
// at rs[i] × the unprofiled one's 10000 trans/s.
func fakeOverhead(env string, c *Comparison, rs []float64) *ComparisonResult {
	res := &ComparisonResult{Env: env, Test: c.Test, Name: c.Name(), Side: overheadA, Peer: c.Peer, PeerTest: c.PeerTest,
		Unit: c.Unit, Target: c.Target, LoadBefore: "0.50 0.40 0.30", LoadAfter: "1.10 0.80 0.50"}
	for i, r := range rs {
		b := 10000.0
		if c.Unit == "bit/s" {
			b = 20e9
		}
		a := b * r
		ma := map[string]float64{"client_cpu_pct": 52, "server_cpu_pct": 48, "cpu_us_per_trans": 21, "cpu_pct_per_100gbit": 90,
			profile.SamplesMetric: 9990, profile.LostMetric: 0, "profile_samples_per_sec": 1998, "profiler_cpu_ms_per_sec": 12.5,
			"profiler_share_of_client_cpu_pct": 2.4, "cpu_share_other_procs": 1.5}
		mb := map[string]float64{"client_cpu_pct": 50, "server_cpu_pct": 47, "cpu_us_per_trans": 20, "cpu_pct_per_100gbit": 88}
		res.Trials = append(res.Trials,
			Trial{Round: i + 1, Side: overheadA, Order: 1 + i%2, Value: &a, Metrics: ma},
			Trial{Round: i + 1, Side: overheadB, Order: 2 - i%2, Value: &b, Metrics: mb})
	}
	return res
}

func TestOverheadFinish(t *testing.T) {
	cheap := []float64{0.99, 1.00, 0.98, 1.01, 0.99, 0.97, 1.00, 0.98, 0.99, 1.02, 0.98, 0.99}
	costly := []float64{0.90, 0.91, 0.89, 0.92, 0.90, 0.88, 0.91, 0.90, 0.89, 0.92, 0.90, 0.91}
	for _, tc := range []struct {
		name          string
		pin           string
		rs            []float64
		kind, verdict string
	}{
		{"cheap", "none", cheap, KindGoal, VerdictMet},
		{"costly", "none", costly, KindGoal, VerdictMissed},
		{"pinned", "same", cheap, KindExploratory, VerdictMet},
	} {
		o := planOptions()
		o.tests, o.pin = overheadTest, tc.pin
		r := &Report{Comparisons: []*ComparisonResult{fakeOverhead("loopback", overheadComparisons[0], tc.rs)}}
		r.finish(o)
		c := r.Comparisons[0]
		if c.Kind != tc.kind || c.Verdict != tc.verdict {
			t.Errorf("%s: kind %s verdict %s (CI %+v), want %s %s", tc.name, c.Kind, c.Verdict, c.CI, tc.kind, tc.verdict)
		}
		if len(c.RatioValues) != len(tc.rs) || c.Cnibench == nil || c.PeerValue == nil || c.PeerValue.Median != 10000 {
			t.Errorf("%s: ratios %v, side A %+v, side B %+v: the sides were not paired", tc.name, c.RatioValues, c.Cnibench, c.PeerValue)
		}
	}
}

func TestOverheadMarkdownGolden(t *testing.T) {
	o := planOptions()
	o.tests, o.envs = overheadTest, "loopback,veth"
	start := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	r := &Report{
		Schema: "cnibench/peerbench/v2", Start: start, End: start.Add(13 * time.Minute),
		Host:   Host{Hostname: "vm", OS: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.18", CPUModel: "AMD EPYC", Cores: 2, MemBytes: 24 << 30, LoadAvg: "0.50 0.40 0.30"},
		Tools:  map[string]string{"go": "go1.26"},
		Config: map[string]string{"rounds": "12", "duration": "5s", "warmup": "1s", "http_clients": "1000", "http_body": "1024", "pin": "none", "tests": overheadTest},
		Plan:   planHeader(o),
		Comparisons: []*ComparisonResult{
			fakeOverhead("loopback", overheadComparisons[0], []float64{0.99, 1.00, 0.98, 1.01, 0.99, 0.97, 1.00, 0.98, 0.99, 1.02, 0.98, 0.99}),
			fakeOverhead("veth", overheadComparisons[1], []float64{0.95, 0.97, 0.93, 0.96, 0.99, 0.94, 0.92, 0.97, 0.95, 0.98, 0.96, 0.94}),
		},
	}
	r.finish(o)
	var b strings.Builder
	r.writeMarkdown(&b)
	out := b.String()
	for _, want := range []string{"profiled (median)", "≥ 0.95 × the unprofiled run's", "Cost of sampling", "+2.0 points", "profiled/unprofiled, in round order"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	golden := filepath.Join("testdata", "overhead.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if out != string(want) {
		os.WriteFile(golden+".got", []byte(out), 0o644)
		t.Errorf("markdown differs from %s (got in %s.got; go test -update to accept)", golden, golden)
	}
}

// testProfile has three samples: one in the engine, two in the sampler's
// reader (one of them in the kernel under it), at 999 Hz.
func testProfile() *pprof.Profile {
	fn := func(id uint64, name string) *pprof.Function { return &pprof.Function{ID: id, Name: name} }
	fLoop := fn(1, profilerFuncPrefix+"(*Session).loop")
	fPoll := fn(2, "do_sys_poll")
	fEngine := fn(3, "github.com/cnibench/cnibench/internal/engine.rrClient")
	loc := func(id uint64, f *pprof.Function) *pprof.Location {
		return &pprof.Location{ID: id, Line: []pprof.Line{{Function: f}}}
	}
	lLoop, lPoll, lEngine := loc(1, fLoop), loc(2, fPoll), loc(3, fEngine)
	return &pprof.Profile{
		SampleType:    []*pprof.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        1001001,
		DurationNanos: int64(2 * time.Second),
		Function:      []*pprof.Function{fLoop, fPoll, fEngine},
		Location:      []*pprof.Location{lLoop, lPoll, lEngine},
		Sample: []*pprof.Sample{
			{Location: []*pprof.Location{lEngine}, Value: []int64{100, 100_000_000}},
			{Location: []*pprof.Location{lLoop}, Value: []int64{3, 3_000_000}},
			{Location: []*pprof.Location{lPoll, lLoop}, Value: []int64{2, 2_500_000}},
		},
	}
}

func TestProfilerCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&profile.Profile{P: testProfile(), Frequency: 999, CPUs: 2, Windows: 1}).Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c, err := readProfilerCost(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Samples != 105 || c.ProfilerSamples != 5 || c.ProfilerCPU != 5500*time.Microsecond || c.Window != 2*time.Second {
		t.Errorf("cost = %+v, want 105 samples, 5 of the profiler, 5.5 ms, window 2s", c)
	}
	m := c.metrics()
	if m["profiler_cpu_ms_per_sec"] != 2.75 || m["profile_samples_per_sec"] != 52.5 {
		t.Errorf("metrics = %v", m)
	}
	for _, tc := range []struct {
		name    string
		mod     func(*pprof.Profile)
		wantErr string
	}{
		{"no cpu type", func(p *pprof.Profile) { p.SampleType = p.SampleType[:1] }, "no cpu sample type"},
		{"no profile", nil, "no samples"},
	} {
		p := &profile.Profile{}
		if tc.mod != nil {
			p.P = testProfile()
			tc.mod(p.P)
		}
		if _, err := profilerCostOf(p); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if _, err := readProfilerCost(filepath.Join(t.TempDir(), "absent.pb.gz")); err == nil {
		t.Error("a missing profile file gave no error")
	}
}
