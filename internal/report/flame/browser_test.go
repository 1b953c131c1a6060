package flame

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
)

// chromium runs headless Chromium with console messages on stderr and
// returns stdout and stderr.
func chromium(t *testing.T, bin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--enable-logging=stderr", "--v=0", "--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}

// testScript stands in for a user: it stubs prompt(), clicks the frame
// tcp_sendmsg of graph ZOOM and "Search" of graph SEARCH, and marks the
// document done (an exception before that leaves no mark).
const testScript = `
(function () {
	window.prompt = function () { return "^tcp_"; };
	function click(e) { e.dispatchEvent(new MouseEvent("click", {bubbles: true})); }
	var titles = document.getElementById("ZOOM-frames").querySelectorAll("title");
	for (var i = 0; i < titles.length; i++) {
		if (titles[i].textContent.indexOf("tcp_sendmsg \u2014") === 0) { click(titles[i].parentNode.querySelector("rect")); }
	}
	click(document.getElementById("SEARCH-search"));
	document.documentElement.setAttribute("data-test", "done");
})();
`

func script(zoom, search string) string {
	return strings.NewReplacer("ZOOM", zoom, "SEARCH", search).Replace(testScript)
}

// highlightRE matches a frame highlighted by a search (class "m").
var highlightRE = regexp.MustCompile(`class="f[^"]* m\b`)

var consoleRE = regexp.MustCompile(`(?m)^.*:CONSOLE.*$`)

// TestBrowser loads two graphs inlined in one HTML page, and a standalone
// SVG file, in headless Chromium; a script clicks a frame of one graph and
// searches the other; the DOM dump must show the zoom (the frame filling
// the width), the search result in that graph only, and no console output.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := testutil.NeedAnyProgram(t, "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")
	dir := t.TempDir()

	// tcp_sendmsg is 40 of 100 samples: 472 px of 1180 before the zoom.
	g1 := render(t, sampleProfile(t), Options{ID: "g1", Inline: true, Title: "graph one"})
	g2 := renderDiff(t, baseProfile(t), sampleProfile(t), Options{ID: "g2", Inline: true})
	page := "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>flame</title></head><body>\n" +
		string(g1) + string(g2) + "<script>" + script("g1", "g2") + "</script>\n</body></html>\n"
	htmlPath := filepath.Join(dir, "page.html")
	if err := os.WriteFile(htmlPath, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}

	// Standalone: the test script appended to the file itself.
	alone := string(render(t, sampleProfile(t), Options{ID: "solo"}))
	alone = strings.Replace(alone, "</svg>\n", "<script><![CDATA["+script("solo", "solo")+"]]></script>\n</svg>\n", 1)
	svgPath := filepath.Join(dir, "solo.svg")
	if err := os.WriteFile(svgPath, []byte(alone), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path  string
		zoomed      string // the graph whose tcp_sendmsg was clicked
		searched    string // the graph searched
		wantMatched string
	}{
		{"inline", htmlPath, "g1", "g2", "matched 50.0 %"},
		{"standalone", svgPath, "solo", "solo", "matched 50.0 %"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom, stderr := chromium(t, bin, "--dump-dom", "file://"+tc.path)
			if !strings.Contains(dom, `data-test="done"`) {
				t.Fatalf("the test script did not finish (an exception?); console:\n%s", strings.Join(consoleRE.FindAllString(stderr, -1), "\n"))
			}
			if msgs := consoleRE.FindAllString(stderr, -1); len(msgs) > 0 {
				t.Errorf("console messages:\n%s", strings.Join(msgs, "\n"))
			}
			if w := frameWidth(t, dom, tc.zoomed, "tcp_sendmsg"); w != "1180.00" {
				t.Errorf("%s: tcp_sendmsg is %s px wide after the click, want the full 1180.00", tc.zoomed, w)
			}
			if w := frameWidth(t, dom, tc.zoomed, "tcp_push"); w != "885.00" {
				t.Errorf("%s: tcp_push (30 of tcp_sendmsg's 40) is %s px wide after the zoom, want 885.00", tc.zoomed, w)
			}
			if !regexp.MustCompile(`id="` + tc.searched + `-matched"[^>]*>` + regexp.QuoteMeta(tc.wantMatched)).MatchString(dom) {
				t.Errorf("%s: no %q after the search", tc.searched, tc.wantMatched)
			}
			if n := len(highlightRE.FindAllString(graphOf(t, dom, tc.searched), -1)); n != 3 {
				t.Errorf("%s: %d frames highlighted, want 3 (tcp_sendmsg, tcp_push, tcp_v4_rcv)", tc.searched, n)
			}
			if tc.zoomed != tc.searched {
				// The graphs keep their state apart.
				if w := frameWidth(t, dom, tc.searched, "tcp_sendmsg"); w != "472.00" {
					t.Errorf("%s: tcp_sendmsg is %s px wide, want 472.00: the zoom leaked into it", tc.searched, w)
				}
				g := graphOf(t, dom, tc.zoomed)
				if !regexp.MustCompile(`id="`+tc.zoomed+`-matched"[^>]*></text>`).MatchString(g) || highlightRE.MatchString(g) {
					t.Errorf("%s: the search leaked into it", tc.zoomed)
				}
			}
		})
	}
}

// graphOf returns the DOM text of the graph with this id.
func graphOf(t *testing.T, dom, id string) string {
	t.Helper()
	i := strings.Index(dom, `<svg xmlns="http://www.w3.org/2000/svg" id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no graph %s in the DOM", id)
	}
	j := strings.Index(dom[i:], "</svg>")
	return dom[i : i+j]
}

// frameWidth returns the width attribute of the frame's rect.
func frameWidth(t *testing.T, dom, id, name string) string {
	t.Helper()
	re := regexp.MustCompile(`<title>` + regexp.QuoteMeta(name) + ` — [^<]*</title><rect [^>]*width="([0-9.]+)"`)
	m := re.FindStringSubmatch(graphOf(t, dom, id))
	if m == nil {
		t.Fatalf("%s: no frame %s", id, name)
	}
	return m[1]
}
