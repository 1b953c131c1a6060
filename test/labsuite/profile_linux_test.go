package labsuite

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestSuiteCPUProfile profiles the cross-node cells of two datapaths on
// the real lab: only those cells are labelled and profiled, each repeat has
// its CPU breakdown, each cell one merged pprof file (the per-repeat files
// are gone), the routed datapath's netfilter work and the eBPF program show
// where they should, and the report renders flamegraphs from the files.
func TestSuiteCPUProfile(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if err := profile.Probe(); errors.Is(err, profile.ErrNotSupported) {
		t.Skip(err)
	}
	before := labNamespaces(t)
	o := tinyOptions(t, "veth-routing", "ebpf-host-routing")
	o.Lab.NoBaseline = true
	o.Tests, o.Flows = []string{engine.TCPRR}, []int{1}
	var err error
	if o.CPUProfile, err = suite.ParseCPUProfile("path=cross-node", 0); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	out, err := o.run(context.Background(), &progress)
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	assertNothingLeft(t, before)
	set, err := result.ReadFile(out.ResultsPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(out.ResultsPath)
	netfilter := map[string]float64{}
	for _, r := range set.Runs {
		if r.Labels["path"] != "cross-node" {
			if r.Profile != nil || r.Labels[suite.ProfiledLabel] != "" {
				t.Errorf("%v: profiled, but only cross-node cells were selected", r.Labels)
			}
			continue
		}
		if r.Labels[suite.ProfiledLabel] != "on" || r.Profile == nil || r.Profile.Samples == 0 || r.Profile.Windows != 2 {
			t.Fatalf("%v: profile %+v, warnings %v", r.Labels, r.Profile, r.Warnings)
		}
		for i, rep := range r.Repeats {
			sum := 0.0
			for _, f := range profile.Families {
				sum += rep.Metrics[result.CPUSharePrefix+f.Name]
			}
			if math.Abs(sum-100) > 0.01 {
				t.Errorf("%v repeat %d: the families' shares sum to %.3f %%", r.Labels, i, sum)
			}
		}
		p, err := profile.ReadFile(filepath.Join(dir, r.Profile.File))
		if err != nil {
			t.Fatal(err)
		}
		sh := profile.Breakdown(p.P)
		netfilter[r.Labels["datapath"]] = sh.Inclusive["netfilter"]
		if sh.Exclusive[profile.FamilyEngine] == 0 {
			t.Errorf("%v: no sample in the engine's user space", r.Labels)
		}
		if r.Labels["datapath"] == "ebpf-host-routing" && r.Profile.BPF["host_routing"] == 0 {
			t.Errorf("ebpf-host-routing: the BPF program is not in the profile (%v)", r.Profile.BPF)
		}
	}
	if !(netfilter["veth-routing"] > netfilter["ebpf-host-routing"]) {
		t.Errorf("netfilter share: veth-routing %.4f, ebpf-host-routing %.4f; the routed datapath's must be larger", netfilter["veth-routing"], netfilter["ebpf-host-routing"])
	}
	if _, err := os.Stat(filepath.Join(dir, suite.ProfileDir, "repeats")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the per-repeat profiles were not cleaned up: %v", err)
	}
	htmlPath, _, err := report.WriteFiles(set, dir)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	svgs, _ := filepath.Glob(filepath.Join(dir, suite.ProfileDir, "*.svg"))
	if !strings.Contains(string(html), `id="cpu"`) || len(svgs) < 3 { // two cells and their differential
		t.Errorf("report: CPU section %v, flamegraph files %v", strings.Contains(string(html), `id="cpu"`), svgs)
	}
}
