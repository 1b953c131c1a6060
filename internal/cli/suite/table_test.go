package suitecmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixture is the report's synthetic suite result without its scenario
// runs (the suite's own matrix), optionally only some datapaths.
func fixture(t *testing.T, datapaths ...string) *result.Set {
	t.Helper()
	set, err := result.ReadFile("../../report/testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	keep := func(l map[string]string) bool {
		if len(datapaths) == 0 {
			return true
		}
		for _, d := range datapaths {
			if l["datapath"] == d {
				return true
			}
		}
		return false
	}
	var runs []result.Run
	for _, r := range set.Runs {
		if r.Labels["scenario"] == "" && keep(r.Labels) {
			runs = append(runs, r)
		}
	}
	set.Runs = runs
	var skipped []result.Skip
	for _, s := range set.Skipped {
		if keep(s.Labels) {
			skipped = append(skipped, s)
		}
	}
	set.Skipped = skipped
	return set
}

func TestTableGolden(t *testing.T) {
	egress, err := result.ReadFile("testdata/egress-results.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		set  *result.Set
	}{
		{"table-all", fixture(t)},
		{"table-subset", fixture(t, "veth-routing", "ebpf-host-routing", "netkit")},
		{"table-egress", egress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Table(&b, tt.set); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(b.String(), "\n") {
				if n := utf8.RuneCountInString(line); n > report.TerminalWidth {
					t.Errorf("line %d is %d columns wide (max %d): %q", i+1, n, report.TerminalWidth, line)
				}
			}
			if tt.name == "table-egress" {
				checkEgressTable(t, b.String())
			} else if n := strings.Count(b.String(), "no netkit"); n != 1 {
				t.Errorf("the netkit skip is printed %d times, want once", n)
			}
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("output differs from %s (run go test -update if intended):\n%s", golden, b.String())
			}
		})
	}
}

// checkEgressTable: the scenario's labels land in their own columns, the
// fixed-rate cell is a column of its own, no baseline note.
func checkEgressTable(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"mechanism", "rules", "udp_stream @1G", "set-up", "too large egress-filter"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, report.NoBaselineNote) || strings.Contains(out, "baseline not run") {
		t.Errorf("scenario table has the baseline note:\n%s", out)
	}
	table, _, _ := strings.Cut(out, "\n\n")
	if strings.Contains(table, "scenario=") || strings.Contains(table, "mechanism=") {
		t.Errorf("scenario labels in the path column:\n%s", out)
	}
	// Only mechanism none has no set-up time (it loads nothing); every
	// test, the fixed-rate one included, has a value in every row.
	if n := strings.Count(table, "—"); n != 2 {
		t.Errorf("%d cells are missing, want 2 (none's set-up):\n%s", n, out)
	}
}

// A point not run after a smaller one failed is printed as such, with the
// failure.
func TestTableNotRun(t *testing.T) {
	set := &result.Set{Schema: result.SchemaResults, Skipped: []result.Skip{{
		Labels: map[string]string{"scenario": "egress-filter", "mechanism": "cilium-policy", "rules": "1000000"},
		Reason: "not run: cilium-policy (every-packet) failed at a smaller size (egress-filter mechanism=cilium-policy rules=100000, repeat 1: etcdserver: request is too large)",
	}}}
	var b bytes.Buffer
	if err := Table(&b, set); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "not run egress-filter") || !strings.Contains(out, "request is too large") || strings.Contains(out, "skipped") {
		t.Errorf("table:\n%s", out)
	}
}
