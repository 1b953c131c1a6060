package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// escalating is a scenario of two series (a and b) of sizes 1, 10, 100 and
// 1000, which escalate; fail says at which series, size and repeats (from
// 1) Prepare fails.
type escalating struct {
	mu    sync.Mutex
	order map[string][]int // datapath/series → sizes in the order prepared
	calls map[string]int   // repeat count per Prepare call (datapath/series)
	fail  func(series string, size, call int) error
}

func (s *escalating) Name() string { return "esc" }

func (s *escalating) Points() []scenario.Point {
	var out []scenario.Point
	for _, series := range []string{"a", "b"} {
		for _, n := range []int{1000, 10, 100, 1} { // not in order: the suite orders them
			out = append(out, scenario.Point{Labels: map[string]string{scenario.LabelScenario: "esc", "series": series, "n": strconv.Itoa(n)}})
		}
	}
	return out
}

func (s *escalating) Escalates(p scenario.Point) (string, int, bool) {
	n, err := strconv.Atoi(p.Labels["n"])
	return p.Labels["series"], n, err == nil
}

func (s *escalating) Cells(scenario.Point) []scenario.Cell {
	return []scenario.Cell{{Test: result.TestTCPRR, Flows: 1}}
}

func (s *escalating) Prepare(_ context.Context, env scenario.Env, p scenario.Point) (scenario.Prepared, error) {
	n, _ := strconv.Atoi(p.Labels["n"])
	key := env.Datapath + "/" + p.Labels["series"]
	s.mu.Lock()
	s.order[key] = append(s.order[key], n)
	s.calls[key+"/"+p.Labels["n"]]++
	call := s.calls[key+"/"+p.Labels["n"]]
	s.mu.Unlock()
	if err := s.fail(p.Labels["series"], n, call); err != nil {
		return nil, err
	}
	return &fakePrepared{s: &fakeScenario{closed: map[string]int{}}, key: key}, nil
}

func (s *escalating) Close(context.Context) error { return nil }

func runEscalating(t *testing.T, fail func(series string, size, call int) error) (*escalating, *result.Set) {
	t.Helper()
	b := &fakeBackend{name: "kubernetes"}
	o := fakeOptions(t, b)
	sc := &escalating{order: map[string][]int{}, calls: map[string]int{}, fail: fail}
	st := &state{r: &Runner{}, o: o, backend: b, sc: sc, token: "t", runs: map[string]*result.Run{}, rank: map[string]int{}}
	set, err := runState(t, st)
	if err != nil {
		t.Fatal(err)
	}
	return sc, set
}

// An escalating series runs in ascending size in every repeat; a failure
// at one size is recorded with its evidence as a finding, is tried again in
// the next repeats, and the larger sizes of that series (on that datapath)
// are recorded "not run" without being attempted, while the other series
// run in full.
func TestEscalationStopsTheSeries(t *testing.T) {
	boom := errors.New("create ciliumclusterwidenetworkpolicies x-1: etcdserver: request is too large")
	sc, set := runEscalating(t, func(series string, size, _ int) error {
		if series == "a" && size == 100 {
			return scenario.WithEvidence(boom, "a with 100", []string{"sent 1 object (1.2 MB)", "agent log: level=error msg=boom"},
				map[string]float64{"policy_objects": 1})
		}
		return nil
	})
	for _, dp := range []string{"dp", "dp-variant"} {
		if got, want := sc.order[dp+"/a"], []int{1, 10, 100, 1, 10, 100, 1, 10, 100}; !slices.Equal(got, want) {
			t.Errorf("%s series a prepared %v, want %v (ascending, 1000 never)", dp, got, want)
		}
		if got, want := sc.order[dp+"/b"], []int{1, 10, 100, 1000, 1, 10, 100, 1000, 1, 10, 100, 1000}; !slices.Equal(got, want) {
			t.Errorf("%s series b prepared %v, want %v", dp, got, want)
		}
	}
	var notRun []result.Skip
	for _, sk := range set.Skipped {
		if strings.HasPrefix(sk.Reason, "not run: ") {
			notRun = append(notRun, sk)
		}
	}
	if len(notRun) != 2 {
		t.Fatalf("skipped %+v, want a/1000 not run on both datapaths", set.Skipped)
	}
	for _, sk := range notRun {
		if sk.Labels["series"] != "a" || sk.Labels["n"] != "1000" ||
			!strings.Contains(sk.Reason, "a failed at a smaller size (esc n=100 series=a, repeat 1: create ciliumclusterwidenetworkpolicies x-1: etcdserver: request is too large)") {
			t.Errorf("not run: %+v", sk)
		}
	}
	var failures []result.Finding
	for _, f := range set.Findings {
		if f.Check == scenario.FailureCheck {
			failures = append(failures, f)
		}
	}
	if len(failures) != 6 {
		t.Fatalf("%d failure findings, want 6 (3 repeats × 2 datapaths): %+v", len(failures), failures)
	}
	f := failures[0]
	if f.Verdict != "failed" || f.Labels["n"] != "100" || f.Labels["repeat"] != "1" || f.Metrics["policy_objects"] != 1 ||
		!slices.Contains(f.Evidence, "agent log: level=error msg=boom") || !strings.Contains(f.Summary, "request is too large") {
		t.Errorf("finding %+v", f)
	}
	// The failed size's repeats are failures, recorded as such.
	for _, r := range set.Runs {
		if r.Labels["series"] == "a" && r.Labels["n"] == "100" {
			if len(r.Repeats) != 3 || !strings.HasPrefix(r.Repeats[0].Error, "prepare failed: ") {
				t.Errorf("a/100: %+v", r.Repeats)
			}
		}
		if r.Labels["n"] == "1000" && r.Labels["series"] == "a" {
			t.Errorf("a/1000 was measured: %+v", r)
		}
	}
}

// A failure in a later repeat keeps what the larger points measured before
// it; their later repeats are not run, with a warning naming them.
func TestEscalationLaterRepeat(t *testing.T) {
	sc, set := runEscalating(t, func(series string, size, call int) error {
		if series == "a" && size == 10 && call == 2 {
			return fmt.Errorf("%w: the deny never held", scenario.ErrNotEnforced)
		}
		return nil
	})
	if got, want := sc.order["dp/a"], []int{1, 10, 100, 1000, 1, 10, 1}; !slices.Equal(got, want) {
		t.Errorf("series a prepared %v, want %v", got, want)
	}
	for _, r := range set.Runs {
		if r.Labels["series"] == "a" && (r.Labels["n"] == "100" || r.Labels["n"] == "1000") && len(r.Repeats) != 1 {
			t.Errorf("a/%s: %d repeats kept, want 1", r.Labels["n"], len(r.Repeats))
		}
	}
	warned := 0
	for _, w := range set.Warnings {
		if strings.Contains(w, "repeats after 1 not run: a failed at a smaller size") {
			warned++
		}
	}
	if warned != 4 {
		t.Errorf("warnings %q: want 4 (a/100 and a/1000 on 2 datapaths)", set.Warnings)
	}
	for _, sk := range set.Skipped {
		if strings.HasPrefix(sk.Reason, "not run") {
			t.Errorf("a point measured before is recorded not run: %+v", sk)
		}
	}
	for _, f := range set.Findings {
		t.Errorf("a failure without evidence made a finding: %+v", f)
	}
}

// Only escalating points are reordered: the others keep the shuffle's
// places, and without escalation the schedule is the shuffle itself.
func TestAscendingKeepsOthers(t *testing.T) {
	points := []*point{
		{esc: &escPoint{series: "s", size: 100}}, {}, {esc: &escPoint{series: "s", size: 1}}, {esc: &escPoint{series: "t", size: 5}}, {esc: &escPoint{series: "s", size: 10}},
	}
	steps := []step{{point: 0}, {point: 1}, {point: 2}, {point: 3}, {point: 4}}
	ascending(steps, points)
	var got []int
	for _, s := range steps {
		got = append(got, s.point)
	}
	if want := []int{2, 1, 4, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	plain := []*point{{}, {}, {}}
	steps = []step{{point: 2}, {point: 0}, {point: 1}}
	ascending(steps, plain)
	if steps[0].point != 2 || steps[1].point != 0 || steps[2].point != 1 {
		t.Errorf("points without escalation reordered: %+v", steps)
	}
}
