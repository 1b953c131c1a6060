package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/cnibench/cnibench/internal/report/flame"
	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

// mdSection is reporttest.MDSection.
func mdSection(doc, title string) string { return reporttest.MDSection(doc, title) }

func TestCPUSectionGolden(t *testing.T) {
	set := reporttest.ProfiledSet(reporttest.ProfileOptions{})
	dir := t.TempDir()
	if err := reporttest.WriteProfiles(set, dir); err != nil {
		t.Fatal(err)
	}
	fg := LoadFlamegraphs(set, dir, dir)
	var md bytes.Buffer
	if err := MarkdownWith(&md, set, fg); err != nil {
		t.Fatal(err)
	}
	got := mdSection(md.String(), "CPU profiles")
	if got == "" {
		t.Fatalf("no CPU profiles section in:\n%s", md.String())
	}
	checkGolden(t, filepath.Join("testdata", "cpu.md.golden"), []byte(got))
}

func TestCPUReferenceAndGroups(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dps     []string
		tests   []string
		wantRef string
		groups  []string
	}{
		{"veth-routing profiled", []string{"bridge", "veth-routing", "ebpf-host-routing"}, []string{"tcp_rr"}, "veth-routing", []string{"cross-node tcp_rr ×1 MTU 1500"}},
		{"first profiled otherwise", []string{"ebpf-host-routing", "bridge"}, []string{"tcp_rr", "tcp_stream"}, "ebpf-host-routing", []string{"cross-node tcp_stream ×1 MTU 1500", "cross-node tcp_rr ×1 MTU 1500"}},
		{"one datapath", []string{"bridge"}, []string{"tcp_rr"}, "bridge", []string{"cross-node tcp_rr ×1 MTU 1500"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: tc.dps, Tests: tc.tests}))
			gs := m.cpuGroups()
			var names []string
			for _, g := range gs {
				names = append(names, groupShort(g.Labels))
				if g.Ref != tc.wantRef {
					t.Errorf("%s: reference %q, want %q", groupShort(g.Labels), g.Ref, tc.wantRef)
				}
				if len(g.DPs) != len(tc.dps) {
					t.Errorf("%s: datapaths %v, want %v", groupShort(g.Labels), g.DPs, tc.dps)
				}
				for _, f := range g.Families {
					if f == "other_procs" || f == "crypto" {
						t.Errorf("family %s is under 0.5 %% everywhere but shown", f)
					}
				}
			}
			if strings.Join(names, "|") != strings.Join(tc.groups, "|") {
				t.Errorf("groups %q, want %q", names, tc.groups)
			}
		})
	}
	if gs := newModel(loadFixture(t, "results.json")).cpuGroups(); len(gs) != 0 {
		t.Errorf("an unprofiled set has %d CPU groups", len(gs))
	}
}

func TestCPUSentences(t *testing.T) {
	same := func() *result.Set {
		// bridge measured exactly like veth-routing: nothing differs.
		s := reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "bridge"}, Tests: []string{"tcp_rr"}})
		for i := range s.Runs[1].Repeats {
			m := map[string]float64{}
			for k, v := range s.Runs[0].Repeats[(i+1)%len(s.Runs[0].Repeats)].Metrics {
				m[k] = v
			}
			s.Runs[1].Repeats[i].Metrics = m
		}
		return s
	}
	for _, tc := range []struct {
		name string
		set  *result.Set
		dp   string
		want string
	}{
		{"significant differences, largest first",
			reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}}),
			"ebpf-host-routing",
			"ebpf-host-routing vs veth-routing, cross-node tcp_rr ×1 MTU 1500: sched_idle +17.0 pp (p = 0.008), netfilter −12.0 pp (p = 0.008), backlog −7.6 pp (p = 0.008), bpf +6.0 pp (p = 0.008), veth −5.0 pp (p = 0.008)"},
		{"a difference under 2 pp is not stated",
			reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "bridge"}, Tests: []string{"tcp_rr"}}),
			"bridge",
			"bridge vs veth-routing, cross-node tcp_rr ×1 MTU 1500: bridge +5.0 pp (p = 0.008), sched_idle −2.0 pp (p = 0.008)"},
		{"nothing differs", same(), "bridge",
			"bridge vs veth-routing, cross-node tcp_rr ×1 MTU 1500: no family differs significantly by 2 pp or more"},
		{"too few repeats",
			reporttest.ProfiledSet(reporttest.ProfileOptions{Repeats: 3, Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}}),
			"ebpf-host-routing",
			"ebpf-host-routing vs veth-routing, cross-node tcp_rr ×1 MTU 1500: no verdict, n=3 vs 3 repeats are too few for a significance test (need ≥ 4 each)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := newModel(tc.set).cpuGroups()
			if len(gs) != 1 {
				t.Fatalf("%d groups, want 1", len(gs))
			}
			got := strings.ReplaceAll(gs[0].compare(tc.dp).sentence(), nbsp, " ")
			if got != tc.want {
				t.Errorf("sentence\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestCPUWhy(t *testing.T) {
	m := newModel(reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}}))
	got := strings.ReplaceAll(strings.Join(m.why("ebpf-host-routing"), "; "), nbsp, " ")
	want := "CPU profile vs veth-routing, cross-node tcp_rr ×1 MTU 1500: sched_idle +17.0 pp, netfilter −12.0 pp, backlog −7.6 pp, bpf +6.0 pp, veth −5.0 pp"
	if !strings.Contains(got, want) {
		t.Errorf("why = %q, want it to contain %q", got, want)
	}
	if w := m.why("veth-routing"); len(w) != 0 {
		t.Errorf("the reference has CPU why statements: %q", w)
	}
}

func TestStackedChartWellFormed(t *testing.T) {
	m := newModel(reporttest.ProfiledSet(reporttest.ProfileOptions{}))
	g := m.cpuGroups()[0]
	c := m.cpuChart(g, 0)
	if c == nil {
		t.Fatal("no chart")
	}
	svg := c.svg()
	dec := xml.NewDecoder(strings.NewReader(svg))
	segs, titled := 0, false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stacked chart is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if se.Name.Local == "rect" && a.Name.Local == "class" && a.Value == "seg" {
					segs++
				}
				if se.Name.Local == "svg" && a.Name.Local == "role" && a.Value == "img" {
					titled = true
				}
			}
			if se.Name.Local == "script" {
				t.Error("the stacked chart has a script")
			}
		}
	}
	if !titled {
		t.Error("the chart's svg has no role=img")
	}
	// 3 datapaths: every shown family with a positive share, plus the
	// "other families" segment (other_procs's 0.3 %).
	want := 0
	for _, cat := range c.Vals {
		for _, v := range cat {
			if v > 0 {
				want++
			}
		}
	}
	if segs != want || segs < 3*8 {
		t.Errorf("%d segments, want %d (≥ 24)", segs, want)
	}
	if !strings.Contains(svg, "other families: other_procs") {
		t.Error("the note does not name the small families")
	}
	if familyColor("netfilter") == familyColor("bpf") || familyColor("made-up") != familyColor("made-up") {
		t.Error("family colours are not distinct and deterministic")
	}
}

var inlineFlameRE = regexp.MustCompile(`<svg xmlns="http://www.w3.org/2000/svg" id="(flame-[cd]\d+)" class="flame"`)

func TestWriteFilesFlamegraphs(t *testing.T) {
	dir := t.TempDir()
	set := reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "bridge", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}})
	if err := reporttest.WriteProfiles(set, dir); err != nil {
		t.Fatal(err)
	}
	// bridge's profile is corrupt: noted, not fatal.
	if err := os.WriteFile(filepath.Join(dir, "profiles", "bridge.tcp_rr.pb.gz"), []byte("not a profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	htmlPath, mdPath, err := WriteFiles(set, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"veth-routing.tcp_rr.svg", "ebpf-host-routing.tcp_rr.svg", "diff.veth-routing.ebpf-host-routing.cross-node_tcp_rr_x1_MTU_1500.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, "profiles", f))
		if err != nil {
			t.Fatalf("standalone flamegraph: %v", err)
		}
		if !bytes.HasPrefix(data, []byte("<?xml")) || !bytes.Contains(data, []byte("<script>")) {
			t.Errorf("%s is not a standalone interactive SVG", f)
		}
		if err := xml.NewDecoder(bytes.NewReader(data)).Decode(new(struct{})); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "profiles", "bridge.tcp_rr.svg")); err == nil {
		t.Error("a flamegraph was written for the corrupt profile")
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	ids := inlineFlameRE.FindAllStringSubmatch(string(html), -1)
	if len(ids) != 3 { // veth-routing, ebpf-host-routing, their diff
		t.Errorf("%d inline flamegraphs, want 3", len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id[1]] {
			t.Errorf("duplicate flamegraph id %s", id[1])
		}
		seen[id[1]] = true
	}
	for _, want := range []string{`<details class="flame">`, `href="profiles/veth-routing.tcp_rr.svg"`, "bridge.tcp_rr.pb.gz is not a pprof profile", "Flamegraphs carry their own small script"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := bytes.Count(html, []byte("<script")); n != len(ids) {
		t.Errorf("report.html has %d scripts, want one per flamegraph (%d)", n, len(ids))
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("- [differential: ebpf-host-routing vs veth-routing](profiles/diff.veth-routing.ebpf-host-routing.cross-node_tcp_rr_x1_MTU_1500.svg)")) {
		t.Errorf("report.md lacks the differential flamegraph's link:\n%s", mdSection(string(md), "CPU profiles"))
	}
	// The report without profiles still has the section, and no script.
	var plain bytes.Buffer
	if err := HTML(&plain, set); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain.String(), `<section id="cpu">`) || strings.Contains(plain.String(), "<script") {
		t.Error("HTML without flamegraphs: want the CPU section and no script")
	}
	var text bytes.Buffer
	if err := Text(&text, set, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "CPU profiles\n====") || strings.Contains(text.String(), "<svg") {
		t.Error("text output: want the CPU section's table, no SVG")
	}
}

func TestFlamegraphSizeBound(t *testing.T) {
	// 20 000 distinct stacks of 12 frames, one sample each: drawn in full
	// they would take megabytes; the graph widens its smallest frame until
	// it fits maxFlameBytes.
	p := &pprof.Profile{SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}}}
	loc := func(name string) *pprof.Location {
		fn := &pprof.Function{ID: uint64(len(p.Function) + 1), Name: name}
		p.Function = append(p.Function, fn)
		l := &pprof.Location{ID: uint64(len(p.Location) + 1), Line: []pprof.Line{{Function: fn}}}
		p.Location = append(p.Location, l)
		return l
	}
	root := loc("comm:cnibench")
	for i := range 20000 {
		var ls []*pprof.Location
		for d := 11; d >= 1; d-- {
			ls = append(ls, loc(fmt.Sprintf("f%d_%d", i%(d*40), d)))
		}
		ls = append(ls, root)
		p.Sample = append(p.Sample, &pprof.Sample{Location: ls, Value: []int64{1}})
	}
	var fg Flamegraphs
	gr, err := fg.render("", "x.svg", "x", flame.Options{ID: "flame-big"}, func(w *bytes.Buffer, o flame.Options) error { return flame.SVG(w, p, o) })
	if err != nil {
		t.Fatal(err)
	}
	if len(gr.Inline) > maxFlameBytes || len(gr.Inline) < 1000 {
		t.Errorf("inline flamegraph is %d bytes, want (1000, %d]", len(gr.Inline), maxFlameBytes)
	}
	if gr.File != "" {
		t.Errorf("a file was written without an output directory: %s", gr.File)
	}
}

// TestFlamegraphPageBudget: past the page's budget, graphs are linked, not
// inlined, and the CPU section says how many.
func TestFlamegraphPageBudget(t *testing.T) {
	defer func(b int) { maxInlineBytes = b }(maxInlineBytes)
	maxInlineBytes = 1 // nothing fits
	dir := t.TempDir()
	set := reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}})
	if err := reporttest.WriteProfiles(set, dir); err != nil {
		t.Fatal(err)
	}
	htmlPath, _, err := WriteFiles(set, dir)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(inlineFlameRE.FindAllString(string(html), -1)); n != 0 {
		t.Errorf("%d inline flamegraphs over the budget, want 0", n)
	}
	for _, want := range []string{`<p class="flame-link"><a href="profiles/veth-routing.tcp_rr.svg">`, "3 flamegraph(s) are linked rather than inline"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
