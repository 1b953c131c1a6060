package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed outputs")

const dataDir = "../../docs/data/quick-2026-11-28"

// The tables of docs/reports.md's "The quick profile" and findings §6
// are this command's outputs on the committed runs: recomputed here, so
// that the grade code and the text cannot drift apart unnoticed.
func TestCommittedQuickRuns(t *testing.T) {
	for _, tc := range []struct {
		out   string
		files []string
	}{
		{"grades.md", []string{"quick-1", "quick-2", "quick-3", "quick-4", "quick-5"}},
		{"explore-pin.md", []string{"explore-pin-none", "explore-pin-split", "explore-pin-same"}},
	} {
		t.Run(tc.out, func(t *testing.T) {
			var files []string
			for _, f := range tc.files {
				p := filepath.Join(dataDir, f+".results.json.gz")
				if _, err := os.Stat(p); err != nil {
					t.Fatalf("the committed runs are gone: %v", err)
				}
				files = append(files, p)
			}
			var b bytes.Buffer
			if err := write(&b, files, "cross-node"); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dataDir, tc.out)
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./hack/quickgrades -update writes it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s differs from what the committed runs give now:\n%s", path, b.Bytes())
			}
		})
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"a/quick-1.results.json.gz":   "quick-1",
		"/var/tmp/run-3/results.json": "run-3",
		"x.json":                      "x",
	} {
		if got := name(in); got != want {
			t.Errorf("name(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNoCells(t *testing.T) {
	if err := write(&bytes.Buffer{}, []string{filepath.Join(dataDir, "quick-1.results.json.gz")}, "no-such-path"); err == nil {
		t.Error("no error for a path without graded cells")
	}
}
