//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestCPUProfileOnCluster profiles the cross-node tcp_rr cell through the
// privileged host pods: the run has its profile summary, each repeat its
// CPU breakdown, and the profile file splits into both nodes' node:
// frames above the processes' comm: frames.
func TestCPUProfileOnCluster(t *testing.T) {
	e := setup(t)
	out := filepath.Join(e.out, "cpu-profile")
	start := time.Now()
	so, se, code := run(t, e.bin, e.suiteArgs(out, "--tests", "tcp_rr", "--checks", "none", "--cpu-profile=path=cross-node")...)
	t.Logf("suite took %v", time.Since(start))
	if code != 0 {
		t.Fatalf("suite exit %d\nstdout %s\nstderr %s", code, so, se)
	}
	set, err := result.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var profiled int
	for _, r := range set.Runs {
		if r.Labels["path"] != "cross-node" {
			if r.Profile != nil {
				t.Errorf("run %v has a profile: only cross-node was asked", r.Labels)
			}
			continue
		}
		profiled++
		if r.Labels["cpu_profile"] != "on" || r.Profile == nil || r.Profile.File == "" || r.Profile.Samples == 0 {
			t.Fatalf("cross-node run: labels %v, profile %+v, warnings %v, set warnings %v", r.Labels, r.Profile, r.Warnings, set.Warnings)
		}
		for i, rep := range r.Repeats {
			if _, ok := rep.Metrics["cpu_share_tcpip"]; !ok {
				t.Errorf("repeat %d has no cpu_share_* metrics: %v", i, rep.Metrics)
			}
		}
		p, err := profile.ReadFile(filepath.Join(out, r.Profile.File))
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]int64{}
		for _, s := range p.P.Sample {
			n := len(s.Location)
			root := s.Location[n-1].Line[0].Function.Name
			if !strings.HasPrefix(root, profile.NodePrefix) || n < 2 || !strings.HasPrefix(s.Location[n-2].Line[0].Function.Name, profile.CommPrefix) {
				t.Fatalf("a sample's stack does not end in comm: then node: (%s)", root)
			}
			nodes[root] += s.Value[0]
		}
		t.Logf("samples by node: %v; breakdown %v", nodes, profile.Breakdown(p.P).Exclusive)
		if len(nodes) != 2 {
			t.Errorf("samples by node %v: want the client's and the server's nodes", nodes)
		}
	}
	if profiled != 1 {
		t.Errorf("%d cross-node runs, want 1", profiled)
	}
	e.assertClean(t, "after the profiled suite")
}
