package comparecmd

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

// writeSweeps writes synthetic egress-filter sweeps into the working
// directory: egress.json (none, ipset and nftables at 10 to 10 000
// rules, nftables failed at 10 000), egress-new.json (the same sweep
// measured again, nftables cheaper per rule), and two CNIs' documents.
func writeSweeps(t *testing.T) {
	t.Helper()
	xs := []int{10, 100, 1000, 10000}
	docs := map[string]reporttest.SweepOptions{
		"egress.json": {Shape: reporttest.EgressShape, Series: []string{"none", "ipset", "nftables"}, Xs: xs,
			Cost:   map[string]float64{"ipset": 0.01, "nftables": 0.06},
			Failed: map[string]string{"nftables/10000": "prepare failed: nft: netlink: Error: Could not process rule: Message too long"}, Seed: 10},
		"egress-new.json": {Shape: reporttest.EgressShape, Series: []string{"none", "ipset", "nftables"}, Xs: xs,
			Cost: map[string]float64{"ipset": 0.01, "nftables": 0.03}, Seed: 11},
		"calico.json": {Shape: reporttest.EgressShape, CNI: "calico", Mode: "vxlan", Version: "v3.29.1",
			Series: []string{"networkpolicy"}, Xs: []int{10, 100, 1000}, Cost: map[string]float64{"networkpolicy": 0.1}, Seed: 12},
		"cilium.json": {Shape: reporttest.EgressShape, CNI: "cilium", Mode: "native", Version: "v1.16.4",
			Series: []string{"networkpolicy"}, Xs: []int{10, 100, 1000}, Cost: map[string]float64{"networkpolicy": 0.02}, Seed: 13},
	}
	for name, o := range docs {
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := result.Write(f, reporttest.SweepSet(o)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// The JSON of a sweep carries its shape, each point's ratio, interval and
// q-value, and the curves' summaries; q is never below p.
func TestCurvesJSON(t *testing.T) {
	t.Chdir(t.TempDir())
	writeSweeps(t)
	out, errOut, code := execute(t, "--format", "json", "--by", "mechanism", "--baseline", "none", "egress.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Tables []struct {
			Metric string `json:"metric"`
			Sweep  *struct {
				Scenario, X string
			} `json:"sweep"`
			Rows []struct {
				Labels   map[string]string `json:"labels"`
				Compared []struct {
					P, Q, Ratio *float64
					RatioLo     *float64 `json:"ratio_lo"`
					RatioHi     *float64 `json:"ratio_hi"`
				} `json:"compared"`
			} `json:"rows"`
			Curves []struct {
				Labels   map[string]string `json:"labels"`
				Compared []string          `json:"compared"`
				OneSide  []string          `json:"one_side"`
				Summary  string            `json:"summary"`
			} `json:"curves"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tables) == 0 || doc.Tables[0].Metric != "filter_setup_seconds" {
		t.Fatalf("tables %+v: want the per-point set-up first", doc.Tables)
	}
	qs := 0
	for _, tb := range doc.Tables {
		if tb.Sweep == nil || tb.Sweep.Scenario != "egress-filter" || tb.Sweep.X != "rules" {
			t.Errorf("%s: sweep %+v", tb.Metric, tb.Sweep)
		}
		prev := map[string]string{}
		for _, r := range tb.Rows {
			if tb.Metric == "filter_setup_seconds" && r.Labels["test"] != "" {
				t.Errorf("per-point metric row with a cell label: %v", r.Labels)
			}
			c := r.Compared[0]
			if c.P != nil && (c.Q == nil || *c.Q < *c.P*(1-1e-12)) {
				t.Errorf("%s %v: p %v, q %v", tb.Metric, r.Labels, c.P, c.Q)
			}
			if c.Q != nil {
				qs++
				if c.Ratio == nil || c.RatioLo == nil || c.RatioHi == nil || *c.RatioLo > *c.Ratio || *c.Ratio > *c.RatioHi {
					t.Errorf("%s %v: ratio %v [%v, %v]", tb.Metric, r.Labels, c.Ratio, c.RatioLo, c.RatioHi)
				}
			}
			m := r.Labels["mechanism"]
			if p := prev[m]; p != "" && len(p) >= len(r.Labels["rules"]) {
				t.Errorf("%s %s: rules %s after %s, want numeric order", tb.Metric, m, r.Labels["rules"], p)
			}
			prev[m] = r.Labels["rules"]
		}
		for _, c := range tb.Curves {
			if c.Labels["mechanism"] == "nftables" && (len(c.OneSide) != 1 || c.OneSide[0] != "10000" || len(c.Compared) != 3) {
				t.Errorf("%s nftables curve: %+v, want 3 points compared and 10000 on one side only", tb.Metric, c)
			}
		}
	}
	// 2 mechanisms × 3 metrics (set-up, rate, p99) × 4 points, less
	// nftables' failed point
	if qs != 21 {
		t.Errorf("%d q-values, want 21", qs)
	}
}
