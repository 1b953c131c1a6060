// Package scenarioreport checks how the report draws scenarios from the
// shapes they write: synthetic results documents of real scenarios (their
// points, cells and shapes), rendered by internal/report, compared with
// golden files. It lives above both, so that the report's own tests link
// no scenario.
package scenarioreport

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/apps"
	"github.com/cnibench/cnibench/internal/scenario/proxies"
	"github.com/cnibench/cnibench/pkg/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// scenarioRuns is a small synthetic results document of a scenario as the
// suite writes it: one run per datapath × point × cell of sc (the labels
// its points and cells carry, five repeats of the metrics metricsOf
// gives), the points that skip names (by pointKey) recorded skipped with
// that reason — the machine's own probes are ignored, so the document does
// not depend on what is installed here — and the shape the scenario
// writes.
func scenarioRuns(t *testing.T, sc scenario.Scenario, datapaths []string, skip map[string]error,
	metricsOf func(l map[string]string) map[string]float64) *result.Set {
	t.Helper()
	shape := sc.(scenario.Shaper).Shape()
	if why := shape.Valid(); why != "" {
		t.Fatalf("%s: shape: %s", sc.Name(), why)
	}
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	set := &result.Set{
		Schema: result.SchemaResults, Start: t0, End: t0.Add(time.Hour),
		Config: map[string]string{"scenario": sc.Name()},
		Shape:  &shape,
	}
	for _, dp := range datapaths {
		set.Datapaths = append(set.Datapaths, result.Datapath{Name: dp, Description: dp + " (synthetic)"})
	}
	var run []scenario.Point
	for _, p := range sc.Points() {
		p.Skip = skip[pointKey(p.Labels)]
		if p.Skip != nil {
			set.Skipped = append(set.Skipped, result.Skip{Labels: maps.Clone(p.Labels), Reason: p.SkipReason()})
			continue
		}
		run = append(run, p)
	}
	for _, dp := range datapaths {
		for _, p := range run {
			for _, c := range scenario.CellsOf(sc, p) {
				l := maps.Clone(p.Labels)
				maps.Copy(l, c.Labels)
				maps.Copy(l, map[string]string{"datapath": dp, "path": "cross-node", "test": c.Test,
					"flows": strconv.Itoa(max(c.Flows, 1)), "mtu": "1500"})
				r := result.Run{Labels: l}
				base := metricsOf(l)
				for i := range 5 {
					jit := 1 + 0.02*float64(i-2)
					m := map[string]float64{}
					for k, v := range base {
						m[k] = v * jit
					}
					r.Repeats = append(r.Repeats, result.Repeat{Index: i, Start: t0.Add(time.Duration(i) * time.Minute), DurationSec: 1, Metrics: m})
				}
				r.Summary = result.SummarizeRepeats(r.Repeats)
				set.Runs = append(set.Runs, r)
			}
		}
	}
	return set
}

// pointKey names a point by its labels other than the scenario's:
// "app=scp", "hops=2 keepalive=off proxy=nginx".
func pointKey(l map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if k == scenario.LabelScenario {
			continue
		}
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, " ")
}

// htmlSection is the <section> of the HTML report with the given id.
func htmlSection(t *testing.T, html, id string) string {
	t.Helper()
	start := strings.Index(html, `<section id="`+id+`">`)
	if start < 0 {
		t.Fatalf("the HTML report has no section %q", id)
	}
	end := strings.Index(html[start:], "</section>")
	if end < 0 {
		t.Fatalf("section %q is not closed", id)
	}
	return html[start : start+end+len("</section>\n")]
}

// datapathFactor slows the synthetic bridge down, so that the two
// datapaths' bars differ.
func datapathFactor(l map[string]string) float64 {
	if l["datapath"] == "bridge" {
		return 0.8
	}
	return 1
}

// The apps scenario's section, from the shape the scenario writes: one
// grouped bar chart per application and metric, groups datapath × file
// size, bars HTTP's keep-alive on and off (one bar for FTP and scp), the
// scenario's own metric titles, and a point without its programs listed
// as not measured with the install command.
func TestAppsReportGolden(t *testing.T) {
	sc, err := apps.New(apps.Options{Sizes: []string{"4KiB", "64MiB"}})
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]error{"app=scp": errors.New("sshd not found (install: " + apps.InstallHint + ")")}
	set := scenarioRuns(t, sc, []string{"veth-routing", "bridge"}, skip, func(l map[string]string) map[string]float64 {
		f := datapathFactor(l)
		gbit := map[string]float64{"app_http": 6e9, "app_ftp": 5e9}[l["test"]] * f
		per := 1.0 // seconds per transfer, from the size
		if l[apps.LabelSize] == "4KiB" {
			gbit /= 100
			per = 0.0004
		}
		if l[apps.LabelKeepAlive] == "off" {
			gbit *= 0.75
			per *= 1.3
		}
		return map[string]float64{
			result.ThroughputBitsPerSec: gbit,
			result.TransPerSec:          1 / per * f,
			result.LatencyUsP50:         per * 1e6 / f,
			result.LatencyUsP99:         per * 1.5e6 / f,
			result.ClientCPUPct:         40 * f,
			result.ServerCPUPct:         25 * f,
		}
	})
	md, html := renderBoth(t, set)
	md, sec := reporttest.MDSection(md, "Scenario apps"), htmlSection(t, html, "scenario-apps")
	reporttest.Golden(t, "testdata/scenario-apps.md.golden", []byte(md), *update)
	reporttest.Golden(t, "testdata/scenario-apps.html.golden", []byte(sec), *update)
	for _, w := range []string{
		"## Scenario apps", "Real applications through each datapath (seed 002)",
		"| Datapath | File size | Keep-alive (HTTP) |", "| veth-routing | 4KiB | on |", "| bridge | 64MiB | off |",
		"Client CPU (curl, scp + ssh)", "Server CPU (the daemon)",
		"Not measured: ", "skipped: sshd not found (install: apt-get install nginx vsftpd openssh-server curl openssh-client)",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("the Markdown report lacks %q", w)
		}
	}
	checkSectionCharts(t, sec, []string{"app_http", "app_ftp"}, 6, []string{"on", "off", "4KiB", "64MiB", "veth-routing", "bridge",
		"Client CPU (curl, scp + ssh)", "Server CPU (the daemon)", "apt-get install nginx vsftpd openssh-server curl openssh-client"})
	if strings.Contains(sec, "app_scp") {
		t.Error("the skipped application has a chart")
	}
	// FTP has no keep-alive setting: its charts have one bar per group
	// (legend "keepalive —"), HTTP's two (on and off).
	for _, w := range []string{">keepalive on</text>", ">keepalive off</text>", ">keepalive —</text>"} {
		if n := strings.Count(sec, w); n != 6 {
			t.Errorf("legend %q in %d charts, want 6", w, n)
		}
	}
	for _, w := range []string{">veth-routing + 4KiB</text>", ">bridge + 64MiB</text>"} {
		if !strings.Contains(sec, w) {
			t.Errorf("no group %q", w)
		}
	}
}

// The proxies scenario's section, from its shape: one grouped bar chart
// per cell (1 and 16 clients) and metric, groups datapath × hops ×
// keep-alive, bars the proxy (none at 0 hops, haproxy and nginx at 1 and
// 2), the proxies' CPU titled as the scenario titles it, and a proxy not
// installed listed as not measured with the install command.
func TestProxiesReportGolden(t *testing.T) {
	sc, err := proxies.New(proxies.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The reason the scenario gives (lookProgram), as the suite records it.
	missing := fmt.Errorf("%w: haproxy not found (install it: %s)", proxies.ErrNotSupported, proxies.InstallHint)
	skip := map[string]error{}
	for _, h := range []string{"1", "2"} {
		for _, ka := range []string{"on", "off"} {
			skip["hops="+h+" keepalive="+ka+" proxy=haproxy"] = missing
		}
	}
	metricsOf := func(l map[string]string) map[string]float64 {
		f := datapathFactor(l)
		hops, _ := strconv.Atoi(l[proxies.LabelHops])
		p50 := 90 + 70*float64(hops)
		if l[proxies.LabelKeepAlive] == proxies.Off {
			p50 += 200 + 150*float64(hops)
		}
		if l[proxies.LabelProxy] == proxies.Nginx {
			p50 *= 1.1
		}
		if l["flows"] == "16" {
			p50 *= 8
		}
		p50 /= f
		m := map[string]float64{
			result.LatencyUsP50: p50, result.LatencyUsP99: 2 * p50,
			result.TransPerSec: 1e6 / p50 * map[string]float64{"1": 1, "16": 16}[l["flows"]] * 0.9,
		}
		if hops > 0 {
			m[proxies.MetricCPUPct] = 30 * float64(hops) * f
			m[proxies.MetricCPUSeconds] = 0.3 * float64(hops) * f
		}
		return m
	}
	set := scenarioRuns(t, sc, []string{"veth-routing", "bridge"}, nil, metricsOf)
	md, html := renderBoth(t, set)
	md, sec := reporttest.MDSection(md, "Scenario proxies"), htmlSection(t, html, "scenario-proxies")
	reporttest.Golden(t, "testdata/scenario-proxies.md.golden", []byte(md), *update)
	reporttest.Golden(t, "testdata/scenario-proxies.html.golden", []byte(sec), *update)
	for _, w := range []string{
		"## Scenario proxies", "HTTP GETs of the native engine through 0, 1 and 2 L7 proxies",
		"| Datapath | Proxy hops | Keep-alive | Proxy |", "| veth-routing | 0 | on | none |", "| bridge | 2 | off | nginx |",
		"Proxies' CPU (% of a core)",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("the Markdown report lacks %q", w)
		}
	}
	checkSectionCharts(t, sec, []string{"http"}, 2*4, []string{">proxy none</text>", ">proxy haproxy</text>", ">proxy nginx</text>",
		">veth-routing + 0 + on</text>", ">veth-routing + 2 + off</text>", ">bridge + 1 + off</text>", ">bridge + 2 + on</text>",
		"Proxies&#39; CPU (% of a core)", "Latency p50", "Latency p99", "Transaction rate"})

	// haproxy missing: its points are listed with the install command,
	// none and nginx still drawn.
	set = scenarioRuns(t, sc, []string{"veth-routing"}, skip, metricsOf)
	md, html = renderBoth(t, set)
	sec = htmlSection(t, html, "scenario-proxies")
	for _, w := range []string{"Not measured: ", "skipped: not supported: haproxy not found (install it: apt-get install haproxy nginx)"} {
		if !strings.Contains(md, w) || !strings.Contains(sec, w) {
			t.Errorf("with haproxy missing, the report lacks %q", w)
		}
	}
	if strings.Contains(sec, ">proxy haproxy<") || !strings.Contains(sec, ">proxy nginx<") || !strings.Contains(sec, ">proxy none<") {
		t.Error("with haproxy missing, the charts' bars are not none and nginx alone")
	}
}

// renderBoth renders set as Markdown and HTML; the golden files hold only
// the scenario's section of each, so that other sections' changes leave
// them alone.
func renderBoth(t *testing.T, set *result.Set) (md, html string) {
	t.Helper()
	var m, h bytes.Buffer
	if err := report.Markdown(&m, set); err != nil {
		t.Fatal(err)
	}
	if err := report.HTML(&h, set); err != nil {
		t.Fatal(err)
	}
	return m.String(), h.String()
}

// checkSectionCharts checks a section draws at least perTest charts for
// each test, none empty, and shows every label in want.
func checkSectionCharts(t *testing.T, sec string, tests []string, perTest int, want []string) {
	t.Helper()
	charts := reporttest.ChartRE.FindAllStringSubmatch(sec, -1)
	if n, w := len(charts), perTest*len(tests); n < w {
		t.Errorf("%d charts in the section, want at least %d (%d per test of %v)", n, w, perTest, tests)
	}
	for _, m := range charts {
		if m[3] == "0" {
			t.Errorf("chart %s is empty", m[2])
		}
	}
	for _, w := range want {
		if !strings.Contains(sec, w) {
			t.Errorf("the section lacks %q", w)
		}
	}
}
