package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	pprof "github.com/google/pprof/profile"

	"github.com/cnibench/cnibench/internal/report/flame"
	"github.com/cnibench/cnibench/pkg/result"
)

// Flamegraphs are the CPU profiles of a results file rendered for the
// report: per profiled cell its flamegraph, per cell group the differential
// flamegraph of each datapath against the group's reference. The HTML
// report inlines them (each in a collapsed <details>, with its own small
// script), the Markdown report links to their standalone .svg files.
type Flamegraphs struct {
	cells map[string]flameGraph // by the run's label key
	diffs map[string]flameGraph // by diffKey
	notes []string
	// inline is the size of the graphs kept inline so far; linked counts
	// those left out of the page for maxInlineBytes (their files linked).
	inline, linked int
}

// flameGraph is one rendered graph.
type flameGraph struct {
	Label  string // what it shows, for the heading and the link
	Inline string // trusted SVG markup from package flame, without XML prolog
	File   string // standalone .svg, relative to the report's directory; "" when not written
}

// maxFlameBytes bounds one graph's size: the minimum frame width doubles
// until the graph fits, so that a page with many graphs stays fast.
const maxFlameBytes = 400 << 10

// maxInlineBytes bounds all the graphs inline in one HTML page: beyond it
// the rest are linked (their standalone files), so that a run with every
// cell profiled still gives a page a browser opens quickly.
var maxInlineBytes = 16 << 20 // a variable: tests lower it

// flameMinFraction is the first minimum frame width tried (of all samples).
const flameMinFraction = 0.001

// ProfilesDir is the directory, beside the report, the standalone
// flamegraphs are written to.
const ProfilesDir = "profiles"

func diffKey(g *cpuGroup, dp string) string { return result.LabelKey(g.Labels) + "\x00" + dp }

// LoadFlamegraphs reads the CPU profile of every profiled run of set
// (Run.Profile.File, relative to resultsDir), renders the flamegraphs and
// the differential flamegraphs, and, when outDir is not "", writes each as
// a standalone SVG to outDir/profiles/ (<profile's base name>.svg and
// diff.<reference>.<datapath>.<cell>.svg). It never fails: a missing,
// unreadable or empty profile, or a file that cannot be written, is noted
// in the report's CPU section instead.
func LoadFlamegraphs(set *result.Set, resultsDir, outDir string) *Flamegraphs {
	fg := &Flamegraphs{cells: map[string]flameGraph{}, diffs: map[string]flameGraph{}}
	m := newModel(set)
	n := 0
	for _, g := range m.cpuGroups() {
		loaded := map[string]*pprof.Profile{}
		for _, dp := range g.DPs {
			r := g.Runs[dp]
			if r.Profile == nil || r.Profile.File == "" {
				continue
			}
			who := show(dp) + ", " + groupTitle(g.Labels)
			p, err := ReadProfile(resultsDir, r.Profile.File)
			if err != nil {
				fg.notes = append(fg.notes, who+": "+err.Error())
				continue
			}
			n++
			o := flame.Options{
				Title:    "CPU flamegraph — " + show(dp),
				Subtitle: groupTitle(g.Labels) + profileFacts(r.Profile),
				ID:       fmt.Sprintf("flame-c%d", n),
			}
			base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(r.Profile.File), ".gz"), ".pb")
			gr, err := fg.render(outDir, base+".svg", show(dp), o, func(w *bytes.Buffer, o flame.Options) error { return flame.SVG(w, p, o) })
			if err != nil {
				fg.notes = append(fg.notes, who+": "+err.Error())
				continue
			}
			loaded[dp] = p
			fg.cells[result.LabelKey(r.Labels)] = gr
		}
		ref := loaded[g.Ref]
		if ref == nil {
			continue
		}
		for _, dp := range g.DPs {
			other := loaded[dp]
			if dp == g.Ref || other == nil {
				continue
			}
			n++
			o := flame.Options{
				Title:      "Differential flamegraph — " + show(dp) + " vs " + show(g.Ref),
				Subtitle:   groupTitle(g.Labels),
				ID:         fmt.Sprintf("flame-d%d", n),
				BaseLabel:  show(g.Ref),
				OtherLabel: show(dp),
			}
			name := fmt.Sprintf("diff.%s.%s.%s.svg", fileSafe(g.Ref), fileSafe(dp), fileSafe(groupShort(g.Labels)))
			gr, err := fg.render(outDir, name, "differential: "+show(dp)+" vs "+show(g.Ref), o, func(w *bytes.Buffer, o flame.Options) error {
				return flame.DiffSVG(w, ref, other, o)
			})
			if err != nil {
				fg.notes = append(fg.notes, "differential "+show(dp)+" vs "+show(g.Ref)+", "+groupTitle(g.Labels)+": "+err.Error())
				continue
			}
			fg.diffs[diffKey(g, dp)] = gr
		}
	}
	return fg
}

// profileFacts describes a profile's sampling: "; 12 345 samples at 999 Hz
// on 2 CPUs over 20 s".
func profileFacts(p *result.Profile) string {
	s := fmt.Sprintf("; %s samples", countText(float64(p.Samples)))
	if p.Hz > 0 {
		s += fmt.Sprintf(" at %d Hz", p.Hz)
	}
	if p.CPUs > 0 {
		s += fmt.Sprintf(" on %d CPUs", p.CPUs)
	}
	if p.Seconds > 0 {
		s += " over " + Num(p.Seconds) + " s"
	}
	return s
}

// render draws one graph inline and standalone, widening the smallest
// frame shown until the graph is under maxFlameBytes, and writes the
// standalone one to outDir/profiles/name.
func (fg *Flamegraphs) render(outDir, name, label string, o flame.Options, draw func(*bytes.Buffer, flame.Options) error) (flameGraph, error) {
	var buf bytes.Buffer
	o.Inline = true
	for o.MinFraction = flameMinFraction; ; o.MinFraction *= 2 {
		buf.Reset()
		if err := draw(&buf, o); err != nil {
			return flameGraph{}, err
		}
		if buf.Len() <= maxFlameBytes || o.MinFraction >= 0.05 {
			break
		}
	}
	gr := flameGraph{Label: label, Inline: buf.String()}
	if outDir != "" && fg.inline+buf.Len() > maxInlineBytes {
		gr.Inline = "" // over the page's budget: linked only
		fg.linked++
	} else {
		fg.inline += buf.Len()
	}
	if outDir == "" {
		return gr, nil
	}
	o.Inline = false
	buf.Reset()
	if err := draw(&buf, o); err != nil {
		return flameGraph{}, err
	}
	rel := filepath.Join(ProfilesDir, name)
	if err := os.MkdirAll(filepath.Join(outDir, ProfilesDir), 0o755); err != nil {
		return flameGraph{}, fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.WriteFile(filepath.Join(outDir, rel), buf.Bytes(), 0o644); err != nil {
		return flameGraph{}, fmt.Errorf("write %s: %w", rel, err)
	}
	gr.File = filepath.ToSlash(rel)
	return gr, nil
}

// ReadProfile reads a run's pprof file (Run.Profile.File) named relative
// to dir, the results file's directory; the name must stay inside dir (a
// results file does not point elsewhere).
func ReadProfile(dir, file string) (*pprof.Profile, error) {
	if !filepath.IsLocal(file) {
		return nil, fmt.Errorf("profile file %q is not a path inside the results file's directory: not read", file)
	}
	f, err := os.Open(filepath.Join(dir, file))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("profile %s is missing (copy it with results.json)", file)
		}
		return nil, fmt.Errorf("profile %s: %w", file, err)
	}
	defer f.Close()
	p, err := pprof.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("profile %s is not a pprof profile: %w", file, err)
	}
	return p, nil
}

// fileSafe maps a name to letters, digits, '-' and '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r == '×':
			return 'x'
		}
		return '_'
	}, s)
}

// link is a Markdown link of a block.
type link struct{ Text, Href string }

// flameBlocks are a group's flamegraphs: inline in the HTML, links in
// Markdown; nothing in the terminal output.
func (m *model) flameBlocks(g *cpuGroup) []block {
	if m.flames == nil {
		return nil
	}
	var graphs []flameGraph
	for _, dp := range g.DPs {
		if gr, ok := m.flames.cells[result.LabelKey(g.Runs[dp].Labels)]; ok {
			graphs = append(graphs, gr)
		}
	}
	for _, dp := range g.DPs {
		if gr, ok := m.flames.diffs[diffKey(g, dp)]; ok {
			graphs = append(graphs, gr)
		}
	}
	if len(graphs) == 0 {
		return nil
	}
	var raw strings.Builder
	var links []link
	raw.WriteString(`<div class="flames"><p>Flamegraphs (open one; click a frame to zoom, Search highlights frames by regular expression):</p>` + "\n")
	for _, gr := range graphs {
		if gr.Inline == "" {
			raw.WriteString(`<p class="flame-link"><a href="` + esc(gr.File) + `">` + esc(gr.Label) + `</a> (standalone SVG; not inline: the page's flamegraph budget is spent)</p>` + "\n")
			links = append(links, link{Text: gr.Label, Href: gr.File})
			continue
		}
		raw.WriteString(`<details class="flame"><summary>` + esc(gr.Label))
		if gr.File != "" {
			raw.WriteString(` · <a href="` + esc(gr.File) + `">standalone SVG</a>`)
			links = append(links, link{Text: gr.Label, Href: gr.File})
		}
		raw.WriteString("</summary>\n<div class=\"fg\">\n" + gr.Inline + "</div></details>\n")
	}
	raw.WriteString("</div>\n")
	out := []block{{Raw: raw.String()}}
	if len(links) > 0 {
		out = append(out, block{Links: links})
	}
	return out
}

// flameNotes are the profiles that could not be shown.
func (m *model) flameNotes() []string {
	if m.flames == nil {
		return nil
	}
	if n := m.flames.linked; n > 0 {
		return append(m.flames.notes[:len(m.flames.notes):len(m.flames.notes)], fmt.Sprintf("%d flamegraph(s) are linked rather than inline: the page keeps at most %d MB of them inline (the standalone SVG files are beside the report)", n, maxInlineBytes>>20))
	}
	return m.flames.notes
}
