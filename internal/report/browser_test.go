package report

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/internal/testutil"
)

var screenshot = flag.String("screenshot", "", "also copy the browser test's PNG screenshot of report.html to this file")

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// TestBrowser renders report.html in headless Chromium (no network, no
// JavaScript needed), checks the rendered DOM for the expected charts and
// for missing data, and takes a screenshot.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := testutil.NeedAnyProgram(t, "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
	dir := t.TempDir()
	htmlPath, _, err := WriteFiles(loadFixture(t, "results-evidence.json"), dir)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + htmlPath

	dom := string(runChromium(t, bin, "--dump-dom", url))
	if !strings.Contains(dom, "<h1>cnibench report</h1>") {
		t.Fatalf("the rendered DOM lacks the report heading; got %d bytes", len(dom))
	}
	checkCharts(t, dom)
	if n := strings.Count(dom, "<table>"); n < 10 {
		t.Errorf("rendered DOM has %d tables, want at least 10", n)
	}
	if strings.Contains(dom, "<td></td>") {
		t.Error("rendered DOM has an empty table cell")
	}

	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,5000", "--hide-scrollbars", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != 1400 || b.Dy() != 5000 {
		t.Errorf("screenshot is %dx%d, want 1400x5000", b.Dx(), b.Dy())
	}
	// A blank or failed page has a handful of colours; the report has
	// coloured grades, bars and anti-aliased text.
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[(r>>11)<<10|(g>>11)<<5|bl>>11] = true
		}
	}
	if len(colours) < 40 {
		t.Errorf("screenshot has only %d distinct colours: the page looks blank", len(colours))
	}
	if *screenshot != "" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshot, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserFlamegraphs renders a report with CPU profiles in headless
// Chromium: the CPU section's stacked charts and an inline flamegraph (an
// svg of class flame with its frames) are in the rendered DOM.
func TestBrowserFlamegraphs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := testutil.NeedAnyProgram(t, "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
	dir := t.TempDir()
	set := reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}})
	if err := reporttest.WriteProfiles(set, dir); err != nil {
		t.Fatal(err)
	}
	htmlPath, _, err := WriteFiles(set, dir)
	if err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, "--dump-dom", "file://"+htmlPath))
	if !strings.Contains(dom, `<section id="cpu">`) || !strings.Contains(dom, "chart-stacked") {
		t.Fatalf("the rendered DOM lacks the CPU section or its stacked chart (%d bytes)", len(dom))
	}
	if n := len(inlineFlameRE.FindAllString(dom, -1)); n != 3 {
		t.Errorf("rendered DOM has %d inline flamegraphs, want 3 (two cells and their differential)", n)
	}
	if !strings.Contains(dom, `class="f" data-s=`) || !strings.Contains(dom, "nf_hook_slow") {
		t.Error("the inline flamegraphs have no frames")
	}
}
