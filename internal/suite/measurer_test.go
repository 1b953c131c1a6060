package suite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// measuringScenario's prepared points measure their own cells
// (scenario.Measurer); cell "bad" fails.
type measuringScenario struct {
	mu      sync.Mutex
	calls   []string
	windows []scenario.Window
	checks  int
}

func (s *measuringScenario) Name() string { return "fakeapps" }

func (s *measuringScenario) Points() []scenario.Point {
	return []scenario.Point{{Labels: map[string]string{scenario.LabelScenario: "fakeapps", "app": "http"}}}
}

func (s *measuringScenario) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{
		{Test: "app_http", Flows: 1, Labels: map[string]string{"size": "4KiB"}},
		{Test: "app_http", Flows: 1, Labels: map[string]string{"size": "bad"}},
	}
}

func (s *measuringScenario) Prepare(context.Context, scenario.Env, scenario.Point) (scenario.Prepared, error) {
	return &measuringPrepared{s: s}, nil
}

func (s *measuringScenario) Close(context.Context) error { return nil }

type measuringPrepared struct{ s *measuringScenario }

func (p *measuringPrepared) Metrics() map[string]float64 {
	return map[string]float64{"setup_seconds": 0.5}
}
func (p *measuringPrepared) Config() map[string]string { return map[string]string{"how": "measured"} }
func (p *measuringPrepared) Close(context.Context) (map[string]float64, error) {
	return nil, nil
}

func (p *measuringPrepared) BeginCell(scenario.Cell) (func() (map[string]float64, error), error) {
	return func() (map[string]float64, error) {
		p.s.mu.Lock()
		p.s.checks++
		p.s.mu.Unlock()
		return map[string]float64{"proof_packets": 7}, nil
	}, nil
}

func (p *measuringPrepared) Measure(_ context.Context, c scenario.Cell, w scenario.Window) (*result.Result, error) {
	p.s.mu.Lock()
	p.s.calls = append(p.s.calls, c.Labels["size"])
	p.s.windows = append(p.s.windows, w)
	p.s.mu.Unlock()
	if c.Labels["size"] == "bad" {
		return nil, errors.New("curl exited 7\nmore detail")
	}
	return &result.Result{Schema: result.SchemaResult, Config: map[string]string{"client": "curl"},
		Repeats: []result.Repeat{{DurationSec: w.Duration.Seconds(), Metrics: map[string]float64{result.ThroughputBitsPerSec: 123}}}}, nil
}

// A prepared point that measures its own cells (scenario.Measurer) is
// called instead of `cnibench run` with the suite's window; the rest of
// the cell is the suite's: the point's labels, metrics and config, the
// Checker's proof, and a failure recorded with its first line.
func TestLoopMeasurer(t *testing.T) {
	b := &fakeBackend{}
	o := fakeOptions(t, b)
	o.Repeat, o.Duration, o.Warmup = 2, 3*time.Second, time.Second
	sc := &measuringScenario{}
	st := &state{r: &Runner{}, o: o, backend: b, sc: sc, token: "t", runs: map[string]*result.Run{}, rank: map[string]int{}}
	set, err := runState(t, st)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range b.deps {
		if len(d.runs) != 0 {
			t.Errorf("cnibench run was called: %v", d.runs)
		}
	}
	// 2 datapaths (dp, dp-variant) × 2 cells × 2 repeats.
	if len(sc.calls) != 8 || sc.checks != 8 {
		t.Errorf("Measure called %d times (%v), checks %d; want 8 each", len(sc.calls), sc.calls, sc.checks)
	}
	for _, w := range sc.windows {
		if w != (scenario.Window{Warmup: time.Second, Duration: 3 * time.Second}) {
			t.Errorf("window %+v", w)
		}
	}
	if len(set.Runs) != 4 {
		t.Fatalf("%d runs, want 4", len(set.Runs))
	}
	for _, r := range set.Runs {
		if r.Labels["app"] != "http" || r.Labels["test"] != "app_http" || len(r.Repeats) != 2 {
			t.Errorf("run %v with %d repeats", r.Labels, len(r.Repeats))
			continue
		}
		rp := r.Repeats[0]
		switch r.Labels["size"] {
		case "4KiB":
			if rp.Error != "" || rp.Metrics[result.ThroughputBitsPerSec] != 123 || rp.Metrics["setup_seconds"] != 0.5 ||
				rp.Metrics["proof_packets"] != 7 || r.Config["how"] != "measured" || r.Config["client"] != "curl" {
				t.Errorf("run %v: repeat %+v config %v", r.Labels, rp, r.Config)
			}
		case "bad":
			if rp.Error != "client failed: curl exited 7" {
				t.Errorf("failed cell recorded %q", rp.Error)
			}
		}
	}
}

// A CPU-profiled cell of a Measurer is refused with the reason, not
// measured unprofiled under the cpu_profile label.
func TestMeasurerRefusesProfile(t *testing.T) {
	b := &fakeBackend{}
	o := fakeOptions(t, b)
	sc := &measuringScenario{}
	st := &state{r: &Runner{}, o: o, backend: b, sc: sc, token: "t", runs: map[string]*result.Run{}, rank: map[string]int{}}
	st.out = &Outcome{ResultsPath: t.TempDir() + "/results.json"}
	st.set = &result.Set{Schema: result.SchemaResults, Config: map[string]string{}}
	st.started = time.Now()
	d, _ := b.Up(context.Background(), backend.Spec{MTU: 1500})
	dr := &depRun{d: d}
	cells := scenarioCells(sc, sc.Points()[0], "dp", dr)
	prep, _ := sc.Prepare(context.Background(), scenario.Env{}, sc.Points()[0])
	c := cells[0]
	c.sc.prep, c.profiled = prep, true
	st.measure(context.Background(), c, 0)
	if len(sc.calls) != 0 {
		t.Errorf("Measure called for a profiled cell")
	}
	run := st.runs[result.LabelKey(c.labels())]
	if run == nil || len(run.Repeats) != 1 || !strings.HasPrefix(run.Repeats[0].Error, "cpu profile: not supported") {
		t.Errorf("profiled cell recorded %+v", run)
	}
}
