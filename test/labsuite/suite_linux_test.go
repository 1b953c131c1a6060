package labsuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// cnibenchBinary builds the cnibench command once for the suite tests: the
// suite runs it inside the namespaces.
func cnibenchBinary(t *testing.T) string {
	t.Helper()
	testutil.NeedProgram(t, "go", "pgrep")
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cnibench-suite-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "cnibench")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/cnibench/cnibench/cmd/cnibench").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// labNamespaces lists the lab's namespaces on this machine.
func labNamespaces(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(lab.NetnsDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "cnb-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// assertNothingLeft checks that the run left no namespace (with its links,
// routes and nftables rules), no BPF pin and no cnibench process behind.
func assertNothingLeft(t *testing.T, before []string) {
	t.Helper()
	// Other tests on this machine may build labs meanwhile: a new namespace
	// is ours if its lab's owner is this process or gone (leaked).
	names := labNamespaces(t)
	runs, _ := lab.Status()
	ours := func(ns string) bool {
		i := slices.IndexFunc(runs, func(r lab.RunStatus) bool { return slices.Contains(r.Namespaces, ns) })
		return i >= 0 && (runs[i].Leaked || (runs[i].State != nil && runs[i].State.PID == os.Getpid()))
	}
	for _, ns := range names {
		if !slices.Contains(before, ns) && ours(ns) {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	if pins, _ := filepath.Glob("/sys/fs/bpf/*cnb*"); len(pins) > 0 {
		t.Errorf("BPF pins left behind: %v", pins)
	}
	testutil.NeedProgram(t, "pgrep")
	if out, _ := exec.Command("pgrep", "-f", binPath+" (serve|run)").Output(); len(out) > 0 {
		t.Errorf("cnibench processes left behind: %s", out)
	}
}

// Options are a suite run's options with the lab backend's.
type Options struct {
	suite.Options
	Lab lab.BackendOptions
	// LockPath is the run's suite lock (a temporary file: the tests do not
	// contend with a suite running on the host).
	LockPath string
}

// run runs the suite on a lab built from o.Lab.
func (o Options) run(ctx context.Context, progress io.Writer) (*suite.Outcome, error) {
	lo := o.Lab
	lo.LockPath = o.LockPath
	b, err := lab.NewBackend(lo)
	if err != nil {
		return nil, err
	}
	o.Options.Backend = b
	r := &suite.Runner{}
	if progress != nil {
		r.Progress = progress
	}
	return r.Run(ctx, o.Options)
}

func tinyOptions(t *testing.T, datapaths ...string) Options {
	so, err := suite.Profile("quick")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Options: so, Lab: lab.BackendOptions{Conntrack: true}, LockPath: filepath.Join(t.TempDir(), "lock")}
	o.Lab.Datapaths = datapaths
	o.Tests = []string{engine.TCPRR, engine.TCPCRR}
	o.Flows = []int{1, 4}
	o.Repeat = 2
	o.Duration = 150 * time.Millisecond
	o.Warmup = 50 * time.Millisecond
	o.OutDir = t.TempDir()
	o.Lab.Binary = cnibenchBinary(t)
	return o
}

func TestSuiteRunsMatrix(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	before := labNamespaces(t)
	o := tinyOptions(t, "baseline", "veth-routing", "netkit")
	var progress strings.Builder
	out, err := o.run(context.Background(), &progress)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	assertNothingLeft(t, before)
	data, err := os.ReadFile(out.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	set, err := result.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	// baseline: 1 path; veth-routing: 2 paths; notrack: tcp_crr cross-node;
	// 2 tests × 2 flow counts.
	want := 1*4 + 2*4 + 2
	if len(set.Runs) != want {
		t.Fatalf("%d runs, want %d", len(set.Runs), want)
	}
	for _, r := range set.Runs {
		for _, k := range []string{"datapath", "path", "test", "flows", "mtu"} {
			if r.Labels[k] == "" {
				t.Errorf("run %v lacks label %s", r.Labels, k)
			}
		}
		if len(r.Repeats) != 2 || r.Summary[result.TransPerSec].Median <= 0 {
			t.Errorf("run %v: %d repeats, trans/s %+v", r.Labels, len(r.Repeats), r.Summary[result.TransPerSec])
		}
		if r.Config["path_mtu"] != r.Config["expected_path_mtu"] {
			t.Errorf("run %v: path MTU %s, datapath expects %s", r.Labels, r.Config["path_mtu"], r.Config["expected_path_mtu"])
		}
		// veth-routing engages conntrack; its NOTRACK variant does not track pod traffic.
		if r.Labels["test"] == engine.TCPCRR && r.Labels["path"] == "cross-node" {
			ct := r.Summary[result.ConntrackEntries].Median
			switch r.Labels["datapath"] {
			case "veth-routing":
				if ct < 10 {
					t.Errorf("veth-routing tcp_crr: %v conntrack entries, want many", ct)
				}
			case lab.NoTrack:
				if ct > 5 {
					t.Errorf("notrack tcp_crr: %v conntrack entries, want ~0", ct)
				}
			}
		}
	}
	if !slices.ContainsFunc(set.Skipped, func(s result.Skip) bool {
		return s.Labels["datapath"] == "netkit" && strings.HasPrefix(s.Reason, "skipped: ")
	}) {
		t.Errorf("netkit not recorded as skipped: %+v", set.Skipped)
	}
	if !strings.Contains(progress.String(), "ETA") {
		t.Errorf("no progress with ETA:\n%s", progress.String())
	}
}

// Killing the suite at many points leaves nothing behind and keeps what was
// measured.
func TestSuiteCancelledAnywhereCleansUp(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	before := labNamespaces(t)
	for _, after := range []time.Duration{0, 5 * time.Millisecond, 30 * time.Millisecond, 80 * time.Millisecond,
		200 * time.Millisecond, 400 * time.Millisecond, 700 * time.Millisecond, 1200 * time.Millisecond, 2 * time.Second} {
		t.Run(after.String(), func(t *testing.T) {
			o := tinyOptions(t, "baseline", "bridge", "ebpf-host-routing")
			o.Lab.Conntrack = false
			ctx, cancel := context.WithTimeout(context.Background(), after)
			defer cancel()
			out, err := o.run(ctx, nil)
			if err == nil {
				t.Logf("finished before %s", after)
			} else if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("suite: %v", err)
			}
			assertNothingLeft(t, before)
			if out != nil {
				data, rerr := os.ReadFile(out.ResultsPath)
				if rerr != nil {
					t.Fatalf("no results.json after the interruption: %v", rerr)
				}
				var set result.Set
				if err := json.Unmarshal(data, &set); err != nil {
					t.Fatalf("results.json unreadable after the interruption: %v", err)
				}
				if err != nil && !set.Interrupted {
					t.Error("results.json does not say it was interrupted")
				}
			}
		})
	}
}
