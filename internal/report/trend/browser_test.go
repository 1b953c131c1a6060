package trend_test

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/report/trend"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestBrowser renders trend.html of a series with a step in headless
// Chromium and checks the rendered DOM: the flagged shift in the table,
// one chart per series with its points, the change point marked red on
// bridge's chart and nowhere else.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := testutil.NeedAnyProgram(t, "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
	tr, err := trend.Analyze(points(stepSeries()), trend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	htmlPath, _, err := tr.WriteFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+htmlPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	dom := stdout.String()
	if !strings.Contains(dom, "<h1>cnibench trend</h1>") {
		t.Fatalf("the rendered DOM lacks the heading (%d bytes)", len(dom))
	}
	row := regexp.MustCompile(`<tr class="regression"><td>bridge, cross-node, tcp_stream, 1 flow</td><td>Throughput</td><td>v0\.7\.0 → v0\.8\.0</td>.*?<td class="num regression">-1[12]\.\d %</td>`)
	if !row.MatchString(dom) {
		t.Error("the shifts table lacks bridge's throughput regression at v0.8.0")
	}
	charts := regexp.MustCompile(`<svg [^>]*class="chart chart-trend" id="(trend-\d+)" data-points="(\d+)" data-changes="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(charts) != len(tr.Series) {
		t.Fatalf("%d charts in the DOM, want %d", len(charts), len(tr.Series))
	}
	changes := 0
	for _, c := range charts {
		if c[2] != "12" {
			t.Errorf("chart %s has %s points, want 12", c[1], c[2])
		}
		if c[3] != "0" {
			changes++
		}
	}
	if changes != 2 {
		t.Errorf("%d charts mark a change, want 2 (bridge's throughput and transaction rate)", changes)
	}
	if n := strings.Count(dom, `<g class="cp regression"><line`); n != 2 {
		t.Errorf("%d red change-point lines, want 2", n)
	}
	if n := strings.Count(dom, "<circle "); n != 12*len(tr.Series) {
		t.Errorf("%d points drawn, want %d", n, 12*len(tr.Series))
	}
}
