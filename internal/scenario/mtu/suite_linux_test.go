package mtu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestSuiteMTU runs the scenario through the suite on vxlan over a
// 9000-byte wire (correct and too-large, one repeat, tiny windows): the
// correct stream is measured with the right detected path MTU and no
// ICMP; the black-holed stream (too-large, ICMP dropped) ends within its
// bound, stalled or with next to nothing through, its counters kept;
// tcp_rr and tcp_crr (1-byte messages) are measured everywhere.
func TestSuiteMTU(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "go")
	bin := filepath.Join(t.TempDir(), "cnibench")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/cnibench/cnibench/cmd/cnibench").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	o, err := suite.Profile("quick")
	if err != nil {
		t.Fatal(err)
	}
	b, err := lab.NewBackend(lab.BackendOptions{Datapaths: []string{"vxlan"}, Binary: bin, LockPath: filepath.Join(t.TempDir(), "lock")})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := scenario.Lookup(ScenarioName)
	build, err := reg.Parse("--pod-mtus", "correct,too-large")
	if err != nil {
		t.Fatal(err)
	}
	o.Backend, o.Scenario, o.NewScenario = b, ScenarioName, build
	o.MTUs, o.Repeat, o.Duration, o.Warmup, o.OutDir = []int{9000}, 1, 300*time.Millisecond, 100*time.Millisecond, t.TempDir()
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	out, err := (&suite.Runner{Progress: &progress}).Run(ctx, o)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	t.Logf("suite took %v", time.Since(t0))
	data, err := os.ReadFile(out.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	set, err := result.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Runs) != 3*3 {
		t.Fatalf("%d runs, want 9 (skipped %+v)\n%s", len(set.Runs), set.Skipped, progress.String())
	}
	for _, r := range set.Runs {
		l := r.Labels
		if len(r.Repeats) != 1 {
			t.Errorf("%v: %d repeats", l, len(r.Repeats))
			continue
		}
		rep := r.Repeats[0]
		m := rep.Metrics
		t.Logf("%s/%s %s: error %q, config path_mtu %s pod_mtu %s, metrics %v", l[LabelPodMTU], l[LabelICMP], l["test"], rep.Error, r.Config["path_mtu"], r.Config["pod_mtu"], m)
		blackHoled := l[LabelPodMTU] == MTUTooLarge && l[LabelICMP] == ICMPDrop && l["test"] == "tcp_stream"
		switch {
		case blackHoled:
			if m[MetricFragNeeded] == 0 || m[MetricUnreachRcvd] != 0 || m[MetricPMTULearnt] != 0 {
				t.Errorf("%v: not a black hole: %v", l, m)
			}
			if rep.Error == "" && m[result.ThroughputBitsPerSec] > 100e6 {
				t.Errorf("%v: measured %v bit/s through a black hole", l, m[result.ThroughputBitsPerSec])
			}
			if rep.Error != "" && !strings.HasPrefix(rep.Error, StalledPrefix) {
				t.Errorf("%v: error %q, want %q…", l, rep.Error, StalledPrefix)
			}
		case rep.Error != "":
			t.Errorf("%v: %s", l, rep.Error)
		case l[LabelPodMTU] == MTUCorrect:
			if m[MetricDetected] != 8950 || m[MetricDetectedOff] != 0 || m[MetricFragNeeded] != 0 || r.Config["pod_mtu"] != "8950" {
				t.Errorf("%v: correct MTU misjudged: %v (config %v)", l, m, r.Config)
			}
		case l[LabelPodMTU] == MTUTooLarge && l["test"] == "tcp_stream":
			if m[MetricDetectedOff] != 50 || m[MetricPMTU] != 8950 || m[MetricPMTULearnt] != 1 {
				t.Errorf("%v: path-MTU discovery not shown: %v", l, m)
			}
		}
	}
}
