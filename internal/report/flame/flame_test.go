package flame

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func foldedStrings(stacks []Stack) []string {
	var out []string
	for _, s := range stacks {
		out = append(out, s.String())
	}
	return out
}

func TestFold(t *testing.T) {
	inl := func() *profile.Profile {
		// One location with two inlined functions (inner first) and a
		// caller location; another sample with an unresolved location.
		outer := &profile.Function{ID: 1, Name: "outer"}
		inner := &profile.Function{ID: 2, Name: "inner"}
		caller := &profile.Function{ID: 3, Name: "caller"}
		root := &profile.Function{ID: 4, Name: "comm:x"}
		l1 := &profile.Location{ID: 1, Line: []profile.Line{{Function: inner}, {Function: outer}}}
		l2 := &profile.Location{ID: 2, Line: []profile.Line{{Function: caller}}}
		l3 := &profile.Location{ID: 3, Line: []profile.Line{{Function: root}}}
		l4 := &profile.Location{ID: 4, Mapping: &profile.Mapping{File: "/usr/lib/x86_64-linux-gnu/libc.so.6"}}
		l5 := &profile.Location{ID: 5}
		return &profile.Profile{Sample: []*profile.Sample{
			{Location: []*profile.Location{l1, l2, l3}, Value: []int64{3}},
			{Location: []*profile.Location{l4, l3}, Value: []int64{2}},
			{Location: []*profile.Location{l5, l3}, Value: []int64{1}},
			{Location: []*profile.Location{l2, l3}, Value: []int64{0}},  // no count
			{Location: []*profile.Location{l2, l3}, Value: []int64{-4}}, // bad count
			{Location: []*profile.Location{l2, l3}},                     // no value
			{Value: []int64{7}},                                         // no location
		}}
	}
	for _, tc := range []struct {
		name string
		p    *profile.Profile
		want []string
	}{
		{"nil", nil, nil},
		{"empty", &profile.Profile{}, nil},
		{"merged and sorted", folded(t, "a;b;c 2", "a;b 1", "a;b;c 3", "a;a 4", "b 1"),
			[]string{"a;a 4", "a;b 1", "a;b;c 5", "b 1"}},
		{"inlined, unknown, no count", inl(),
			[]string{" 7", "comm:x;[unknown] 1", "comm:x;[unknown] libc.so.6 2", "comm:x;caller;outer;inner 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := foldedStrings(Fold(tc.p))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Fold:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestOptionsRefused(t *testing.T) {
	p := sampleProfile(t)
	for _, tc := range []struct {
		name  string
		o     Options
		field string
	}{
		{"narrow", Options{Width: 100}, "Options.Width"},
		{"negative width", Options{Width: -1}, "Options.Width"},
		{"huge width", Options{Width: 1 << 30}, "Options.Width"},
		{"fraction 1", Options{MinFraction: 1}, "Options.MinFraction"},
		{"negative fraction", Options{MinFraction: -0.1}, "Options.MinFraction"},
		{"depth", Options{MaxDepth: -2}, "Options.MaxDepth"},
		{"id with quote", Options{ID: `a"b`}, "Options.ID"},
		{"id with digit first", Options{ID: "1a"}, "Options.ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			for _, err := range []error{SVG(&b, p, tc.o), DiffSVG(&b, p, p, tc.o)} {
				if err == nil || !strings.Contains(err.Error(), tc.field) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %v, want one line naming %s", err, tc.field)
				}
			}
			if b.Len() != 0 {
				t.Errorf("wrote %d bytes despite the error", b.Len())
			}
		})
	}
}

func TestNoSamples(t *testing.T) {
	empty := folded(t, "a;b 0")
	p := sampleProfile(t)
	var b bytes.Buffer
	for name, err := range map[string]error{
		"SVG":        SVG(&b, empty, Options{}),
		"DiffSVG a":  DiffSVG(&b, empty, p, Options{BaseLabel: "veth"}),
		"DiffSVG b":  DiffSVG(&b, p, empty, Options{}),
		"SVG nil":    SVG(&b, nil, Options{}),
		"DiffSVG ni": DiffSVG(&b, nil, p, Options{}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if strings.HasSuffix(name, "nil") || strings.HasSuffix(name, "ni") {
			continue
		}
		if !errors.Is(err, ErrNoSamples) {
			t.Errorf("%s: %v does not wrap ErrNoSamples", name, err)
		}
	}
}

func TestGolden(t *testing.T) {
	svg := render(t, sampleProfile(t), Options{Title: "tcp_stream on veth-routing", Subtitle: "client node, 1 flow", ID: "g1"})
	wellFormed(t, svg)
	golden(t, "flame.svg.golden", svg)

	diff := renderDiff(t, baseProfile(t), sampleProfile(t), Options{ID: "d1", BaseLabel: "ebpf-host-routing", OtherLabel: "veth-routing"})
	wellFormed(t, diff)
	golden(t, "diff.svg.golden", diff)
}

func TestContent(t *testing.T) {
	svg := string(render(t, sampleProfile(t), Options{ID: "g1"}))
	for _, want := range []string{
		`<?xml version="1.0"`,
		`<title>all — 100 samples (100.0 %)</title>`,
		`<title>tcp_sendmsg — 40 samples (40.0 %)</title>`,
		`<title>[unknown] libc.so.6 — 5 samples (5.0 %)</title>`,
		`id="g1-reset"`, `id="g1-search"`, `id="g1-matched"`,
		`data-samples="100"`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	inline := string(render(t, sampleProfile(t), Options{ID: "g1", Inline: true}))
	if strings.HasPrefix(inline, "<?xml") || !strings.HasPrefix(inline, "<svg ") {
		t.Errorf("inline SVG starts with %.40q, want <svg", inline)
	}
	if strings.Contains(scriptTmpl, "]]>") {
		t.Error("the script contains ]]>, which ends its CDATA section")
	}
	// Colours by family: kernel warm, Go aqua, BPF purple.
	for name, check := range map[string]func(r, g, b int) bool{
		"tcp_sendmsg":                  func(r, g, b int) bool { return r > 200 && b < 90 },
		"bpf_prog:hostrouting_ingress": func(r, g, b int) bool { return b >= 200 && r > g },
		"syscall.Syscall":              func(r, g, b int) bool { return r < 130 && g > 160 && b > 160 },
	} {
		r, g, b := fillOf(t, svg, name)
		if !check(r, g, b) {
			t.Errorf("%s has colour rgb(%d,%d,%d), not its family's", name, r, g, b)
		}
	}
}

var fillRE = regexp.MustCompile(`<title>([^<]*) — [^<]*</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"`)

// fillOf returns the fill of the first frame named name.
func fillOf(t *testing.T, svg, name string) (r, g, b int) {
	t.Helper()
	for _, m := range fillRE.FindAllStringSubmatch(svg, -1) {
		if m[1] == name {
			return atoi(m[2]), atoi(m[3]), atoi(m[4])
		}
	}
	t.Fatalf("no frame %q", name)
	return
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = 10*n + int(c-'0')
	}
	return n
}

func TestDeterministic(t *testing.T) {
	p := sampleProfile(t)
	a := render(t, p, Options{})
	// The same samples in another order, split in two, are the same
	// profile: the same bytes.
	q := sampleProfile(t)
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(q.Sample), func(i, j int) { q.Sample[i], q.Sample[j] = q.Sample[j], q.Sample[i] })
	s := *q.Sample[0]
	s.Value = []int64{1}
	q.Sample[0].Value = []int64{q.Sample[0].Value[0] - 1}
	q.Sample = append(q.Sample, &s)
	for i := 0; i < 3; i++ {
		if b := render(t, q, Options{}); !bytes.Equal(a, b) {
			t.Fatal("the same profile rendered differently")
		}
	}
	d1 := renderDiff(t, baseProfile(t), p, Options{})
	d2 := renderDiff(t, baseProfile(t), q, Options{})
	if !bytes.Equal(d1, d2) {
		t.Fatal("the same differential graph rendered differently")
	}
}

func TestHostileNames(t *testing.T) {
	hostile := []string{
		`<script>alert(1)</script>`, `"quoted" & 'single'`, `]]><x>`, "ctl\x01\x00char", "bad\xffutf8", `</svg>`,
	}
	var lines []string
	for i, h := range hostile {
		lines = append(lines, "comm:"+h+";"+h+" "+string(rune('1'+i)))
	}
	p := folded(t, lines...)
	o := Options{Title: `<b>"title"</b> & co`, Subtitle: "]]>", BaseLabel: "<a>", OtherLabel: "&amp;"}
	base := folded(t, append(lines, "gone;"+hostile[0]+" 9")...)
	for name, out := range map[string][]byte{
		"SVG":     render(t, p, o),
		"DiffSVG": renderDiff(t, base, p, o),
	} {
		counts := wellFormed(t, out)
		if counts["script"] != 1 || counts["svg"] != 1 || counts["x"] != 0 || counts["b"] != 0 || counts["a"] != 0 {
			t.Errorf("%s: hostile names made elements: %v", name, counts)
		}
		if bytes.Contains(out, []byte("<script>alert")) {
			t.Errorf("%s: a frame name is not escaped", name)
		}
		if !bytes.Contains(out, []byte("&lt;script&gt;alert(1)&lt;/script&gt;")) {
			t.Errorf("%s: the escaped name is missing", name)
		}
	}
}

func TestMinFraction(t *testing.T) {
	var lines []string
	lines = append(lines, "comm:a;big 9000")
	for i := range 20 {
		lines = append(lines, "comm:a;tiny"+string(rune('a'+i))+" 10") // 0.109 % each, 2.2 % together
	}
	lines = append(lines, "comm:b;lone 5") // 0.054 %: alone under its parent
	p := folded(t, lines...)
	for _, tc := range []struct {
		name     string
		minFrac  float64
		frames   int
		contains []string
		lacks    []string
	}{
		{"default keeps all", 0, 25, []string{"tinyt —", "lone —"}, []string{"narrow frames"}},
		{"merged into …", 0.002, 4, []string{"… (20 narrow frames) — 200 samples (2.2 %)"}, []string{"tinya —", "comm:b —", "(1 narrow frames)"}},
		{"merged … too narrow too", 0.05, 3, []string{"big —"}, []string{"narrow frames", "comm:b —"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg := string(render(t, p, Options{MinFraction: tc.minFrac}))
			wellFormed(t, []byte(svg))
			if n := strings.Count(svg, `<g class="f"`); n != tc.frames {
				t.Errorf("%d frames, want %d", n, tc.frames)
			}
			for _, s := range tc.contains {
				if !strings.Contains(svg, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(svg, s) {
					t.Errorf("has %q", s)
				}
			}
		})
	}
}

func TestMaxDepth(t *testing.T) {
	p := folded(t, "a;b;c;d 5", "a;e 5")
	for depth, frames := range map[int]int{0: 6, 1: 2, 2: 4, 3: 5, 9: 6} {
		svg := string(render(t, p, Options{MaxDepth: depth}))
		if n := strings.Count(svg, `<g class="f"`); n != frames {
			t.Errorf("MaxDepth %d: %d frames, want %d", depth, n, frames)
		}
	}
}

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    float64
		want string
	}{
		{"tcp_sendmsg", 200, "tcp_sendmsg"},
		{"tcp_sendmsg", 6.1 + 6*charW, "tcp_s…"},
		{"tcp_sendmsg", 6 + 2*charW, ""},
		{"äöüäöü", 6.1 + 4*charW, "äöü…"},
	} {
		if got := label(tc.name, tc.w); got != tc.want {
			t.Errorf("label(%q, %v) = %q, want %q", tc.name, tc.w, got, tc.want)
		}
	}
}

func TestFamilies(t *testing.T) {
	kernel := &profile.Mapping{ID: 1, File: "[kernel.kallsyms]"}
	libc := &profile.Mapping{ID: 2, File: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	for _, tc := range []struct {
		name     string
		mapping  *profile.Mapping
		filename string
		want     family
	}{
		{"tcp_v4_rcv", nil, "", famKernel},
		{"tcp_v4_rcv", kernel, "[kernel.kallsyms]", famKernel},
		{"ip_finish_output2.isra.0", nil, "", famKernel},
		{"nf_conntrack_in", kernel, "[nf_conntrack]", famKernel},
		{"memcpy", libc, "/usr/lib/x86_64-linux-gnu/libc.so.6", famUser},
		{"odd.name", kernel, "", famKernel},
		{"github.com/cnibench/cnibench/internal/engine.(*client).run", nil, "", famUser},
		{"runtime.goexit", nil, "", famUser},
		{"std::vector<int>::push_back", nil, "", famUser},
		{"bpf_prog:hostrouting_ingress", kernel, "[bpf]", famBPF},
		{"[unknown] libc.so.6", libc, "", famUnknown},
		{"comm:swapper/0", nil, "", famProcess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := &profile.Function{ID: 1, Name: tc.name, Filename: tc.filename}
			loc := &profile.Location{ID: 1, Mapping: tc.mapping, Line: []profile.Line{{Function: fn}}}
			root := build(&profile.Profile{Sample: []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{1}}}})
			if got := familyOf(root.sorted[0]); got != tc.want {
				t.Errorf("family %d, want %d", got, tc.want)
			}
		})
	}
}
