package labsuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// A --datapaths subset gets the baseline for the graded summary (unless
// --no-baseline); the results record seed, pin and wire; every cell starts
// from flushed conntrack tables, so a tcp_rr measured after a tcp_crr does
// not inherit its thousands of entries.
func TestSuiteSubsetOrderAndCleanStart(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	before := labNamespaces(t)
	o := tinyOptions(t, "veth-routing")
	o.Flows = []int{1}
	o.Repeat = 3
	o.Lab.Conntrack = false
	o.Seed = 7
	o.Lab.Pin = lab.PinSame
	o.MTUs = []int{1500, 9000}
	var progress strings.Builder
	out, err := o.run(context.Background(), &progress)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	assertNothingLeft(t, before)
	set := out.Set
	if set.Config["seed"] != "7" || set.Config["pin"] != lab.PinSame || set.Config["wire"] == "" || set.Config["baseline"] != "true" {
		t.Errorf("config: %v", set.Config)
	}
	if !slices.ContainsFunc(set.Runs, func(r result.Run) bool { return r.Labels["datapath"] == "baseline" }) {
		t.Error("the baseline was not added to a --datapaths subset")
	}
	if !strings.Contains(progress.String(), "seed 7") {
		t.Errorf("progress does not show the seed:\n%s", progress.String())
	}
	// The MTU 9000 lab's cells are interleaved with the main matrix, not
	// run after it.
	var first9000, last1500 time.Time
	for _, r := range set.Runs {
		for _, rep := range r.Repeats {
			if r.Labels["mtu"] == "9000" && (first9000.IsZero() || rep.Start.Before(first9000)) {
				first9000 = rep.Start
			}
			if r.Labels["mtu"] == "1500" && rep.Start.After(last1500) {
				last1500 = rep.Start
			}
		}
	}
	if first9000.IsZero() || !first9000.Before(last1500) {
		t.Errorf("MTU 9000 cells (first at %v) not interleaved with the MTU 1500 ones (last at %v)", first9000, last1500)
	}
	for _, r := range set.Runs {
		if r.Labels["datapath"] != "veth-routing" || r.Labels["test"] != engine.TCPRR {
			continue
		}
		for _, rep := range r.Repeats {
			if ct := rep.Metrics[result.ConntrackEntries]; ct > 50 {
				t.Errorf("%v repeat %d: %v conntrack entries: carried over from an earlier cell", r.Labels, rep.Index, ct)
			}
			if _, ok := rep.Metrics[suite.TimeWaitAtStart]; !ok {
				t.Errorf("%v repeat %d: no %s", r.Labels, rep.Index, suite.TimeWaitAtStart)
			}
		}
	}

	o.Lab.NoBaseline = true
	o.Repeat = 1
	o.Tests = []string{engine.TCPRR}
	o.OutDir = t.TempDir()
	out, err = o.run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(out.Set.Runs, func(r result.Run) bool { return r.Labels["datapath"] == "baseline" }) {
		t.Error("--no-baseline: the baseline was added")
	}
	assertNothingLeft(t, before)
}

// A suite that finds a lab left by a dead run says so and how to remove it.
func TestSuiteNotesLeakedLab(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("zleak%d", dead.Process.Pid%100000)
	st := lab.State{Schema: lab.StateSchema, RunID: runID, PID: dead.Process.Pid, Created: time.Now().UTC(), WireMTU: 1500}
	b, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(lab.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lab.StatePath(runID), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(lab.StatePath(runID)) })
	o := tinyOptions(t, "baseline")
	o.Tests, o.Flows, o.Repeat = []string{engine.TCPRR}, []int{1}, 1
	var progress strings.Builder
	out, err := o.run(context.Background(), &progress)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a leaked lab of a dead run (pid %d) is on this machine: run %s", dead.Process.Pid, runID)
	if !strings.Contains(progress.String(), want) || !strings.Contains(progress.String(), "remove it with 'cnibench lab down'") {
		t.Errorf("progress does not report the leaked lab:\n%s", progress.String())
	}
	if !slices.ContainsFunc(out.Set.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings: %q", out.Set.Warnings)
	}
}
