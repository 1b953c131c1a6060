package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// fakeBackend is a backend whose clients answer at once: the loop's
// planning, order, labels, skips and clean-up run without a lab or a
// cluster, on any OS.
type fakeBackend struct {
	name string
	mu   sync.Mutex
	ups  []backend.Spec
	deps []*fakeDeployment
	// opened and closed count Open and its close.
	opened, closed int
}

func (b *fakeBackend) Name() string {
	if b.name == "" {
		return "fake"
	}
	return b.name
}

func (b *fakeBackend) SetsMTU() bool { return b.name == "" }

func (b *fakeBackend) Config() map[string]string { return map[string]string{"fake": "yes"} }

func (b *fakeBackend) Open(context.Context, backend.Events) (func(), error) {
	b.opened++
	return func() { b.closed++ }, nil
}

func (b *fakeBackend) Up(_ context.Context, spec backend.Spec) (backend.Deployment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ups = append(b.ups, spec)
	d := &fakeDeployment{spec: spec}
	b.deps = append(b.deps, d)
	return d, nil
}

type fakePlace string

func (p fakePlace) String() string { return string(p) }

type fakeDeployment struct {
	spec  backend.Spec
	mu    sync.Mutex
	runs  []string // "place args…"
	down  bool
	reset int
	// foreign, when set, gives the n-th client run's foreign_cpu_pct.
	foreign func(n int) float64
}

func (d *fakeDeployment) Datapaths() []backend.Datapath {
	return []backend.Datapath{
		{Name: "dp"},
		{Name: "dp-variant", OnlyTests: []string{result.TestTCPCRR}, OnlyPaths: []string{"cross-node"}},
		{Name: "gone", Skipped: "no such kernel feature"},
	}
}

func (d *fakeDeployment) Paths(dp string) []backend.Path {
	if d.spec.Scenario != nil {
		return []backend.Path{{Kind: "cross-node", Client: fakePlace(dp + "-client"), Target: "10.0.0.2:1"}}
	}
	return []backend.Path{
		{Kind: "cross-node", Client: fakePlace(dp + "-client"), Target: "10.0.0.2:1", PathMTU: 1500},
		{Kind: "pod-to-service", Client: fakePlace(dp + "-client"), Args: func(test string) ([]string, string) {
			if test == result.TestTCPStream {
				return nil, "a service carries request/response tests only"
			}
			return []string{"--service", "10.96.0.1:1"}, ""
		}},
	}
}

func (d *fakeDeployment) Run(_ context.Context, place backend.Place, args []string) ([]byte, []byte, error) {
	d.mu.Lock()
	d.runs = append(d.runs, place.String()+" "+strings.Join(args, " "))
	n := len(d.runs) - 1
	d.mu.Unlock()
	res := result.Result{Schema: result.SchemaResult, Config: map[string]string{"test": args[slices.Index(args, "--test")+1]},
		Repeats: []result.Repeat{{DurationSec: 1, Metrics: map[string]float64{result.TransPerSec: 1000, result.ThroughputBitsPerSec: 1e9}}}}
	if d.foreign != nil {
		f := d.foreign(n)
		res.Repeats[0].Metrics[result.ForeignCPUPct] = f
		// A busy window measures less.
		res.Repeats[0].Metrics[result.TransPerSec] = 1000 - 5*f
	}
	b, err := json.Marshal(res)
	return b, nil, err
}

func (d *fakeDeployment) Reset(context.Context, string) (int, error) {
	d.reset++
	return 3, nil
}

func (d *fakeDeployment) Evidence(string) backend.Evidence { return nil }
func (d *fakeDeployment) Labels() map[string]string        { return map[string]string{"cluster": "c1"} }
func (d *fakeDeployment) Down(context.Context) error {
	d.down = true
	return nil
}

func fakeOptions(t *testing.T, b *fakeBackend) Options {
	o, err := Profile("quick")
	if err != nil {
		t.Fatal(err)
	}
	o.Backend, o.OutDir, o.Seed, o.Repeat = b, t.TempDir(), 5, 3
	o.Tests, o.Flows = []string{result.TestTCPStream, result.TestTCPRR, result.TestTCPCRR}, []int{1}
	return o
}

// The matrix is one point of every deployment's cells: each repeat runs
// every cell once, the variant datapath only on its tests and paths, the
// cells a path cannot carry recorded skipped, the backend opened, brought
// up per MTU, reset before every cell, and brought down.
func TestLoopMatrix(t *testing.T) {
	b := &fakeBackend{}
	o := fakeOptions(t, b)
	o.MTUs = []int{1500, 9000}
	out, err := (&Runner{}).Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if b.opened != 1 || b.closed != 1 || len(b.ups) != 2 || b.ups[0].Sweep || !b.ups[1].Sweep || b.ups[0].Token == "" {
		t.Errorf("backend: opened %d closed %d ups %+v", b.opened, b.closed, b.ups)
	}
	for _, d := range b.deps {
		if !d.down {
			t.Error("a deployment was not brought down")
		}
	}
	// MTU 1500: dp 2 paths × 3 tests, less tcp_stream on the service,
	// and the variant's tcp_crr cross-node; MTU 9000: tcp_stream and
	// tcp_rr of dp (tcp_stream not on the service), none of the variant.
	var keys []string
	for _, r := range out.Set.Runs {
		keys = append(keys, fmt.Sprintf("%s/%s/%s/%s", r.Labels["datapath"], r.Labels["path"], r.Labels["test"], r.Labels["mtu"]))
		if len(r.Repeats) != 3 || r.Labels["cluster"] != "c1" || r.Repeats[0].Metrics[TimeWaitAtStart] != 3 {
			t.Errorf("%v: %d repeats, metrics %v", r.Labels, len(r.Repeats), r.Repeats[0].Metrics)
		}
	}
	want := []string{
		"dp/cross-node/tcp_stream/1500", "dp/cross-node/tcp_rr/1500", "dp/cross-node/tcp_crr/1500",
		"dp/pod-to-service/tcp_rr/1500", "dp/pod-to-service/tcp_crr/1500",
		"dp-variant/cross-node/tcp_crr/1500",
		"dp/cross-node/tcp_stream/9000", "dp/cross-node/tcp_rr/9000", "dp/pod-to-service/tcp_rr/9000",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("runs (in plan order):\n%v\nwant\n%v", keys, want)
	}
	var skipped []string
	for _, s := range out.Set.Skipped {
		skipped = append(skipped, s.Labels["datapath"]+"/"+s.Labels["path"]+"/"+s.Labels["test"]+": "+s.Reason)
	}
	if !slices.Contains(skipped, "gone//: skipped: no such kernel feature") ||
		!slices.Contains(skipped, "dp/pod-to-service/tcp_stream: skipped: a service carries request/response tests only") {
		t.Errorf("skipped: %v", skipped)
	}
	if out.Set.Config["fake"] != "yes" || out.Set.Config["backend"] != "fake" || out.Set.Config["seed"] != "5" {
		t.Errorf("config %v", out.Set.Config)
	}
	// Both deployments' cells are interleaved in one shuffled order.
	runs := append(slices.Clone(b.deps[0].runs), b.deps[1].runs...)
	if len(runs) != 3*len(want) {
		t.Errorf("%d client runs, want %d", len(runs), 3*len(want))
	}
	if b.deps[0].reset != 3*6 || b.deps[1].reset != 3*3 {
		t.Errorf("resets %d, %d", b.deps[0].reset, b.deps[1].reset)
	}
}

// --paths keeps the named pod paths (an IP family's twin with them) and
// always the baseline's node-to-node path.
func TestLoopPaths(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  []string
	}{
		{nil, []string{"cross-node", "pod-to-service"}},
		{[]string{"cross-node"}, []string{"cross-node"}},
		{[]string{"pod-to-service", "same-node"}, []string{"pod-to-service"}},
	} {
		b := &fakeBackend{}
		o := fakeOptions(t, b)
		o.Paths = tc.paths
		out, err := (&Runner{}).Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range out.Set.Runs {
			if r.Labels["datapath"] == "dp" && !slices.Contains(got, r.Labels["path"]) {
				got = append(got, r.Labels["path"])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("--paths %v: paths measured %v, want %v", tc.paths, got, tc.want)
		}
	}
	for _, c := range []struct {
		paths []string
		kind  string
		keep  bool
	}{
		{nil, "hairpin", true},
		{[]string{"cross-node"}, "node-to-node", true},
		{[]string{"cross-node"}, "cross-node-ipv6", true},
		{[]string{"cross-node"}, "cross-node-pairs", false},
		{[]string{"cross-node"}, "same-node", false},
	} {
		if got := (Options{Paths: c.paths}).keepPath(c.kind); got != c.keep {
			t.Errorf("--paths %v, path %s: kept %v, want %v", c.paths, c.kind, got, c.keep)
		}
	}
}

// labOnly is a capability the fake backend's deployments lack.
type labOnly interface {
	LabAccess(datapath string) (struct{}, error)
}

// fakeScenario has two points; Prepare fails with ErrNeedsLab-like
// unsupported errors for one of them.
type fakeScenario struct {
	mu       sync.Mutex
	prepared map[string]int
	closed   map[string]int
}

func (s *fakeScenario) Name() string { return "fake" }

func (s *fakeScenario) Points() []scenario.Point {
	return []scenario.Point{
		{Labels: map[string]string{scenario.LabelScenario: "fake", "n": "1"}},
		{Labels: map[string]string{scenario.LabelScenario: "fake", "n": "2"}},
		{Labels: map[string]string{scenario.LabelScenario: "fake", "n": "3"}, Skip: fmt.Errorf("%w: at most 2", scenario.ErrTooLarge)},
	}
}

func (s *fakeScenario) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{{Test: result.TestTCPRR, Flows: 1}, {Test: result.TestTCPCRR, Flows: 1}}
}

func (s *fakeScenario) Prepare(_ context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	if p.Labels["n"] == "2" {
		if _, err := scenario.Access(env, scenario.ErrNeedsLab, labOnly.LabAccess); err != nil {
			return nil, fmt.Errorf("fake: %w", err)
		}
	}
	if env.Path.Kind != "cross-node" || env.Run == nil {
		return nil, fmt.Errorf("env without its path: %+v", env)
	}
	s.mu.Lock()
	s.prepared[env.Datapath+"/"+p.Labels["n"]]++
	s.mu.Unlock()
	return &fakePrepared{s: s, key: env.Datapath + "/" + p.Labels["n"]}, nil
}

func (s *fakeScenario) Close(context.Context) error { return nil }

type fakePrepared struct {
	s   *fakeScenario
	key string
}

func (p *fakePrepared) Metrics() map[string]float64 { return map[string]float64{"setup_seconds": 0.5} }
func (p *fakePrepared) Config() map[string]string   { return map[string]string{"how": "fake"} }
func (p *fakePrepared) Close(context.Context) (map[string]float64, error) {
	p.s.mu.Lock()
	p.s.closed[p.key]++
	p.s.mu.Unlock()
	return map[string]float64{"teardown_seconds": 0.25}, nil
}

// A scenario runs through the same loop on any backend: every point
// prepared and closed once per repeat on every datapath, its cells
// labelled with the point's labels, its set-up and tear-down metrics
// attached; a point that needs the lab is recorded skipped once (not
// refused for the whole run), a too-large point recorded too large.
func TestLoopScenario(t *testing.T) {
	b := &fakeBackend{name: "kubernetes"}
	o := fakeOptions(t, b)
	sc := &fakeScenario{prepared: map[string]int{}, closed: map[string]int{}}
	st := &state{r: &Runner{}, o: o, log: nil, backend: b, sc: sc, token: "t", runs: map[string]*result.Run{}, rank: map[string]int{}}
	out, err := runState(t, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.ups) != 1 || b.ups[0].Scenario == nil || b.ups[0].Scenario.Name != "fake" {
		t.Fatalf("ups %+v", b.ups)
	}
	for _, k := range []string{"dp/1", "dp-variant/1"} {
		if sc.prepared[k] != 3 || sc.closed[k] != 3 {
			t.Errorf("%s: prepared %d closed %d, want 3 each", k, sc.prepared[k], sc.closed[k])
		}
	}
	if len(out.Runs) != 4 {
		t.Errorf("%d runs, want 4 (n=1 × 2 datapaths × 2 cells)", len(out.Runs))
	}
	for _, r := range out.Runs {
		if r.Labels["n"] != "1" || r.Labels["scenario"] != "fake" || r.Labels["path"] != "cross-node" || len(r.Repeats) != 3 {
			t.Errorf("run %v with %d repeats", r.Labels, len(r.Repeats))
			continue
		}
		if r.Repeats[0].Metrics["setup_seconds"] != 0.5 || r.Repeats[2].Metrics["teardown_seconds"] != 0.25 || r.Config["how"] != "fake" {
			t.Errorf("run %v: metrics %v config %v", r.Labels, r.Repeats[0].Metrics, r.Config)
		}
	}
	reasons := map[string]int{}
	for _, s := range out.Skipped {
		reasons[s.Labels["n"]+" "+s.Labels["datapath"]+": "+s.Reason]++
	}
	want := map[string]int{
		"3 : too large: at most 2":                                     1,
		"2 dp: skipped: fake: " + scenario.ErrNeedsLab.Error():         1,
		"2 dp-variant: skipped: fake: " + scenario.ErrNeedsLab.Error(): 1,
		" gone: skipped: no such kernel feature":                       1,
	}
	if !maps.Equal(reasons, want) {
		t.Errorf("skipped %v\nwant %v", reasons, want)
	}
}

// runState runs a prepared state's loop as Runner.Run does.
func runState(t *testing.T, st *state) (*result.Set, error) {
	t.Helper()
	st.out = &Outcome{ResultsPath: t.TempDir() + "/results.json"}
	st.set = &result.Set{Schema: result.SchemaResults, Start: time.Now(), Config: map[string]string{}}
	st.out.Set = st.set
	if st.log == nil {
		st.log = slog.New(slog.DiscardHandler)
	}
	st.started = time.Now()
	err := st.run(context.Background())
	return st.set, err
}
