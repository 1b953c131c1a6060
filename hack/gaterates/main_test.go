package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed rate tables")

// dataDir holds the committed runs behind docs/reports.md's error rates.
const dataDir = "../../docs/data/gate-rates-2026-11-25"

// TestCommittedRates recomputes every rate table docs/reports.md quotes
// from the committed runs: the tables (rates-<set>-r<rounds>.md beside
// the data) and the data cannot drift apart.
func TestCommittedRates(t *testing.T) {
	if testing.Short() {
		t.Skip("recomputes every pair of the committed runs")
	}
	for _, tc := range []struct {
		set    string
		rounds []int
	}{
		{"quick", []int{1, 2, 3}},
		{"quick-loaded", []int{1, 2}},
		{"standard", []int{1, 2}},
	} {
		for _, k := range tc.rounds {
			name := fmt.Sprintf("rates-%s-r%d.md", tc.set, k)
			t.Run(name, func(t *testing.T) {
				dir := filepath.Join(dataDir, tc.set)
				if _, err := os.Stat(dir); err != nil {
					t.Fatalf("the committed runs are gone: %v", err)
				}
				*rounds = k
				defer func() { *rounds = 1 }()
				var b bytes.Buffer
				// The header names the directory: make it the data's own name.
				if err := report1(&b, dir); err != nil {
					t.Fatal(err)
				}
				got := bytes.ReplaceAll(b.Bytes(), []byte(dataDir+"/"), nil)
				path := filepath.Join(dataDir, name)
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test ./hack/gaterates -update writes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from what the committed runs give now:\n%s", path, got)
				}
			})
		}
	}
}
