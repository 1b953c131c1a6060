package reporttest

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Golden compares got with the golden file at path; with update it
// rewrites the file (only when it changed: other packages' tests may read
// it), on a mismatch it writes path.got (gitignored) for diffing.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, got) {
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gotPath := strings.TrimSuffix(path, ".golden") + ".got"
		_ = os.WriteFile(gotPath, got, 0o644)
		t.Errorf("%s differs from the output; wrote %s (diff them, or run go test -update if the change is intended)", path, gotPath)
	}
}

// MDSection returns the Markdown (or text) of one section of a report:
// from its "## title" heading to the next.
func MDSection(doc, title string) string {
	i := strings.Index(doc, "## "+title+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+3:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j+1]
	}
	return "## " + rest
}

// ChartRE matches a report's chart in its HTML: kind, id and point count.
var ChartRE = regexp.MustCompile(`<svg [^>]*class="chart chart-([a-z]+)" id="([^"]+)" data-points="(\d+)"`)
