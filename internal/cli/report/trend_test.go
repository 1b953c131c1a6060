package reportcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/trend/trendtest"
	"github.com/cnibench/cnibench/pkg/result"
)

// writeSeries writes a 10-point series with a 15 % throughput drop at the
// 7th point as DIR/night-NN/results.json and returns the directories.
func writeSeries(t *testing.T) []string {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for i, set := range trendtest.Series(trendtest.Spec{Levels: trendtest.Step(10, 6, 0.85), Seed: 5}) {
		dir := filepath.Join(root, "night-"+string(rune('a'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Create(filepath.Join(dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := result.Write(fh, set); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		dirs = append(dirs, dir)
	}
	return dirs
}

func TestTrendOut(t *testing.T) {
	dirs := writeSeries(t)
	out := filepath.Join(t.TempDir(), "trend")
	args := append([]string{"--trend", "--out", out}, dirs[:5]...)
	for _, d := range dirs[5:] {
		args = append(args, filepath.Join(d, "results.json")) // files and directories mixed
	}
	stdout, stderr, code := execute(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" || !strings.Contains(stderr, "1 flagged change points (1 regressions)") {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "trend.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| bridge, cross-node, tcp_stream, 1 flow | Throughput | night-f → night-g |") {
		t.Errorf("trend.md lacks the shift at night-g:\n%s", md)
	}
	page, err := os.ReadFile(filepath.Join(out, "trend.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), `<g class="cp regression">`) {
		t.Error("trend.html is not the page with the regression marked")
	}
}

func TestTrendStdoutSortPointLabel(t *testing.T) {
	dirs := writeSeries(t)
	rev := make([]string, len(dirs))
	for i, d := range dirs {
		rev[len(dirs)-1-i] = d
	}
	args := append([]string{"--trend", "--sort", "time", "--point-label", "version", "--metrics", "throughput_bits_per_sec", "--min-shift", "5%"}, rev...)
	stdout, stderr, code := execute(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "| v0.5.0 → v0.6.0 |") || !strings.Contains(stdout, "| cell | v0.0.0 | v0.1.0 |") {
		t.Errorf("the Markdown on stdout lacks the points in time order named by version:\n%s", stdout)
	}
	if strings.Contains(stdout, "CPU %") {
		t.Error("--metrics throughput_bits_per_sec still shows the CPU cost")
	}
	stdout, _, code = execute(t, append([]string{"--trend", "--format", "html"}, dirs...)...)
	if code != 0 || !strings.HasPrefix(stdout, "<!DOCTYPE html>") {
		t.Errorf("--format html: exit %d, output starts %q", code, stdout[:min(30, len(stdout))])
	}
}

func TestTrendUsage(t *testing.T) {
	dirs := writeSeries(t)
	tests := []struct {
		args []string
		want string
	}{
		{append([]string{"--trend"}, dirs[:2]...), "--trend needs at least 3 runs"},
		{append([]string{"--trend", "--alpha", "0"}, dirs...), "--alpha 0"},
		{append([]string{"--trend", "--min-shift", "x"}, dirs...), "--min-shift x"},
		{append([]string{"--trend", "--sort", "name"}, dirs...), "--sort name"},
		{append([]string{"--trend", "-o", "x.html"}, dirs...), "use --out DIR"},
		{append([]string{"--trend", "--metrics", "bogus"}, dirs...), "--metrics bogus"},
		{append([]string{"--trend", "--point-label", "zone"}, dirs...), "--point-label zone"},
		{append([]string{"--trend", "--match", "test"}, dirs...), ""}, // one cell per point: fine
		{[]string{"--match", "test", fixture}, "--match: only used with --trend"},
	}
	for _, tt := range tests {
		_, stderr, code := execute(t, tt.args...)
		if tt.want == "" {
			if code != 0 {
				t.Errorf("%v: exit %d: %s", tt.args, code, stderr)
			}
			continue
		}
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
