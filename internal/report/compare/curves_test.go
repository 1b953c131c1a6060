package compare

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// A sweep's rows come out per curve, ordered by N numerically, with
// q-values over every point × metric; a comparison without a sweep gets
// no sweep table, and a single row's q is its p.
func TestCurves(t *testing.T) {
	xs := []int{100000, 10, 1000, 100, 10000}
	old := reporttest.SweepSet(reporttest.SweepOptions{Shape: reporttest.EgressShape, Series: []string{"none", "ipset"}, Xs: xs,
		Cost: map[string]float64{"ipset": 0.01}, Seed: 1})
	cur := reporttest.SweepSet(reporttest.SweepOptions{Shape: reporttest.EgressShape, Series: []string{"none", "ipset"}, Xs: xs,
		Cost: map[string]float64{"ipset": 0.05}, Seed: 2})
	r, err := Compare([]Input{{"old.json", old}, {"new.json", cur}}, Options{Metrics: []string{result.TransPerSec, result.LatencyUsP99}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tables) != 2 || r.Tables[0].Sweep == nil || r.Tables[0].Sweep.X != "rules" {
		t.Fatalf("tables %+v: want two sweep tables", r.Tables)
	}
	if r.Tests != 20 {
		t.Errorf("%d tests adjusted for, want 20 (2 curves × 5 points × 2 metrics)", r.Tests)
	}
	var got []string
	for _, row := range r.Tables[0].Rows {
		got = append(got, row.Labels["mechanism"]+"/"+row.Labels["rules"])
		if c := row.Cells[0]; !c.HasQ || c.Q < c.P*(1-1e-12) || c.Q > 1 {
			t.Errorf("%v: p %g q %g (has %v)", row.Labels, c.P, c.Q, c.HasQ)
		}
	}
	want := []string{"none/10", "none/100", "none/1000", "none/10000", "none/100000", "ipset/10", "ipset/100", "ipset/1000", "ipset/10000", "ipset/100000"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	var ipset Curve
	for _, c := range r.Tables[0].Curves {
		if c.Labels["mechanism"] == "ipset" {
			ipset = c
		}
	}
	if len(ipset.Compared) != 5 || len(ipset.Better) != 0 || len(ipset.Worse) == 0 {
		t.Errorf("ipset's rate curve %+v: want worse at some of 5 points", ipset)
	}
	txt := ipset.Text("rules")
	if !strings.HasPrefix(txt, "mechanism=ipset: worse at ") || !strings.Contains(txt, " of 5 points (q ≤ 0.05): rules=") {
		t.Errorf("summary %q", txt)
	}

	// No sweep: no sweep table; one row, q = p.
	plain := set(run(map[string]string{"test": "tcp_rr", "flows": "1", "datapath": "a"}, result.TransPerSec, 100, 101, 99, 100, 102))
	plain2 := set(run(map[string]string{"test": "tcp_rr", "flows": "1", "datapath": "a"}, result.TransPerSec, 90, 91, 89, 90, 92))
	r, err = Compare([]Input{{"a.json", plain}, {"b.json", plain2}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Tables[0].Rows[0].Cells[0]; r.Tests != 1 || r.Tables[0].Sweep != nil || !c.HasQ || c.Q != c.P {
		t.Errorf("a one-row comparison without a sweep: %d tests, %+v", r.Tests, r.Tables[0])
	}
}

func TestCurveText(t *testing.T) {
	for _, tc := range []struct {
		c    Curve
		want string
	}{
		{Curve{Labels: map[string]string{"mechanism": "ipset"}, Compared: []string{"10", "100", "1000", "10000"}, Worse: []string{"1000", "10000"}, Alpha: 0.05},
			"mechanism=ipset: worse at 2 of 4 points (q ≤ 0.05): rules=1000,10000"},
		{Curve{Labels: map[string]string{}, Compared: []string{"10", "100"}, Alpha: 0.05, OneSide: []string{"1000"}},
			"the curve: no significant change at any of 2 points (q ≤ 0.05); measured on one side only: rules=1000"},
		{Curve{Labels: map[string]string{"test": "tcp_rr", "mechanism": "nft"}, Compared: []string{"10", "100"}, Better: []string{"10"}, Changed: []string{"100"}, Alpha: 0.05},
			"test=tcp_rr mechanism=nft: better at 1 of 2 points (q ≤ 0.05): rules=10; changed at 1 of 2 points (q ≤ 0.05): rules=100"},
		{Curve{Labels: map[string]string{"mechanism": "x"}, Alpha: 0.05, OneSide: []string{"10"}},
			"mechanism=x: no point compared; measured on one side only: rules=10"},
	} {
		if got := tc.c.Text("rules"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{0.9123: "0.912", 1.234: "1.23", 51.04: "51.0", 123.4: "123", 12345: "12345", 0.0012345: "0.00123"} {
		if got := sig3(v); got != want {
			t.Errorf("sig3(%g) = %s, want %s", v, got, want)
		}
	}
	if got := ratioText(Cell{Compared: true, Change: stats0()}); got != "—" {
		t.Errorf("no ratio: %q", got)
	}
}

func stats0() (c stats.Change) {
	c.Ratio, c.Lo, c.Hi = math.NaN(), math.NaN(), math.NaN()
	return c
}

// A per-point metric keeps one row per point, whatever labels tell the
// point's cells apart (test, path, and a scenario's own such as
// udp_handshake).
func TestOnePerPoint(t *testing.T) {
	sw := &Sweep{Scenario: "egress-filter", X: "rules", Series: "mechanism", Variant: "traversal"}
	row := func(mech, rules, test, hs string, n int) *Row {
		l := map[string]string{"scenario": "egress-filter", "mechanism": mech, "rules": rules, "traversal": "every-packet", "test": test, "path": "cross-node"}
		if hs != "" {
			l["udp_handshake"] = hs
		}
		return &Row{Labels: l, Base: Side{Present: true, Summary: stats.Summary{N: n}}}
	}
	rows := []*Row{
		row("ipset", "10", "tcp_rr", "", 5), row("ipset", "10", "udp_stream", "reply", 5), row("ipset", "10", "udp_stream", "", 4),
		row("ipset", "1000", "tcp_rr", "", 5), row("ipset", "1000", "udp_stream", "reply", 5),
		row("nftables", "10", "tcp_rr", "", 3), row("nftables", "10", "udp_stream", "reply", 5),
	}
	got := onePerPoint(rows, sw)
	if len(got) != 3 {
		t.Fatalf("%d rows, want 3 (one per point)", len(got))
	}
	for _, r := range got {
		for _, k := range []string{"test", "path", "udp_handshake"} {
			if _, ok := r.Labels[k]; ok {
				t.Errorf("%v keeps the cell label %s", r.Labels, k)
			}
		}
		if r.Labels["mechanism"] == "nftables" && r.Base.Summary.N != 5 {
			t.Errorf("nftables at 10: the row with %d repeats, want the one with the most (5)", r.Base.Summary.N)
		}
	}
}
