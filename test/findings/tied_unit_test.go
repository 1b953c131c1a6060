package findings

import (
	"strings"
	"testing"
)

func TestBlocks(t *testing.T) {
	text := "## 9. A section\n" +
		"\n" +
		"A paragraph of two\n" +
		"lines. <!-- at: a.txt -->\n" +
		"\n" +
		"- an item\n" +
		"  continued\n" +
		"- another item <!-- at: a.txt;\n" +
		"  b.txt -->\n" +
		"* a third\n" +
		"\n" +
		"| h | h |\n" +
		"|---|---|\n" +
		"| 1 % | 2 % <!-- at: a.txt --> |\n" +
		"```\n" +
		"fenced 3 %\n" +
		"```\n" +
		"after the fence\n"
	var got []string
	for _, b := range blocks(text) {
		got = append(got, b.name())
	}
	want := []string{"9. A section", "A paragraph of two lines.", "an item continued", "another item", "a third",
		"h | h |", "", "1 % | 2 % |", "after the fence"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("blocks:\n%q\nwant\n%q", got, want)
	}
	if bs := blocks(text); !strings.Contains(bs[3].raw, "b.txt -->") {
		t.Errorf("a comment spanning lines left its block: %q", bs[3].raw)
	}
}

func TestParseAt(t *testing.T) {
	outs := []string{"data/x/std-a.txt", "data/x/std-b.txt", "data/y/std-b.txt", "data/y/c.txt"}
	for _, tc := range []struct {
		spec string
		want []string // out, regexp ("" for none)
		err  string
	}{
		{spec: "std-a.txt", want: []string{"data/x/std-a.txt", ""}},
		{spec: "data/x/std-b.txt /veth-routing /", want: []string{"data/x/std-b.txt", "veth-routing "}},
		{spec: "std-a.txt /trans/s  1/; c.txt", want: []string{"data/x/std-a.txt", "trans/s  1", "data/y/c.txt", ""}},
		{spec: "std-a.txt /a|b/ ; data/y/std-b.txt /^x/", want: []string{"data/x/std-a.txt", "a|b", "data/y/std-b.txt", "^x"}},
		{spec: "std-b.txt", err: "ambiguous: data/x/std-b.txt, data/y/std-b.txt"},
		{spec: "nothing.txt", err: "no check output of the page is named nothing.txt"},
		{spec: "data/z/c.txt", err: "not a check output"},
		{spec: "c.txt /(/", err: "missing closing )"},
		{spec: "c.txt /open", err: "not closed"},
		{spec: "c.txt std-a.txt", err: "expected ;"},
		{spec: "", err: "names no output"},
	} {
		srcs, err := parseAt(tc.spec, outs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseAt(%q): err %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseAt(%q): %v", tc.spec, err)
			continue
		}
		var got []string
		for _, s := range srcs {
			re := ""
			if s.re != nil {
				re = s.re.String()
			}
			got = append(got, s.out, re)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("parseAt(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestCheckBlock(t *testing.T) {
	outputs := map[string]string{
		"data/x/s1.txt": "datapath  vs base\n" +
			"veth-routing   4883  7747  -37.0% (p=0.008 q=0.016 n=5)\n" +
			"ebpf           5845  7747  -24.6% (p=0.008 q=0.016 n=5)\n" +
			"ebpf-vs-veth   5845  4883  +19.7% (p=0.016 q=0.032 n=5)\n" +
			"stream         6.47 Gbit/s ± 32%  ~ (p=0.222 q=0.222 n=5)\n",
		"data/x/s2.txt": "other  +3.1% (p=0.400 q=0.800 n=5)\n",
		"data/y/s2.txt": "other  +3.1% (p=0.400 q=0.800 n=5)\n",
	}
	for _, tc := range []struct {
		name  string
		block string
		err   string // "" when the block passes
	}{
		{"figures on their lines", "eBPF +19.7 % (p=0.016, q=0.032) <!-- at: s1.txt /ebpf-vs-veth/ -->", ""},
		{"unsigned figure, either sign", "a change of 37.0 % <!-- at: s1.txt /veth-routing/ -->", ""},
		{"several sources", "−24.6 % and +3.1 % <!-- at: s1.txt /^ebpf /; data/x/s2.txt /other/ -->", ""},
		{"a source without a regexp", "6.47 Gbit/s and −37.0 % <!-- at: data/x/s1.txt -->", `at: data/x/s1.txt names no /REGEXP/`},
		{"one bare source among tied ones", "+3.1 % <!-- at: s1.txt /ebpf/; data/x/s2.txt -->", `block "+3.1 %" (line 1): at: data/x/s2.txt names no /REGEXP/`},
		{"no figures, no at: needed", "Nothing measured here.", ""},
		{"not data is exempt", "the seed's 105 % <!-- no at -->", ""},
		{"the threshold is exempt", "a difference at q ≤ 0.05", ""},
		{"a figure from the wrong line", "eBPF +19.7 % <!-- at: s1.txt /^ebpf /-->", `"+19.7 %" is not among the numbers of s1.txt /^ebpf /`},
		{"a p-value from the wrong line", "p = 0.016 <!-- at: s1.txt /veth-routing/ -->", `"p = 0.016" is not among`},
		{"a q-value at another precision", "q=0.03 <!-- at: s1.txt /ebpf-vs-veth/ -->", ""},
		{"a q-value not printed", "q=0.04 <!-- at: s1.txt /ebpf-vs-veth/ -->", `"q=0.04" is not among`},
		{"sign mismatch", "eBPF −19.7 % <!-- at: s1.txt /ebpf-vs-veth/ -->", `"−19.7 %" is not among`},
		{"sign mismatch, ASCII minus", "eBPF -19.7 % <!-- at: s1.txt /ebpf-vs-veth/ -->", `"-19.7 %" is not among`},
		{"missing at:", "| tcp_crr ×1 | 4883 | **−37.0 %** (p=0.008) |", `block "tcp_crr ×1 | 4883 | **−37.0 %** (p=0.008) |" (line 1) quotes −37.0 %, p=0.008 but has no <!-- at:`},
		{"ambiguous base name", "+3.1 % <!-- at: s2.txt /other/ -->", "s2.txt is ambiguous: data/x/s2.txt, data/y/s2.txt"},
		{"a path resolves what the base name cannot", "+3.1 % <!-- at: data/y/s2.txt /other/ -->", ""},
		{"a regexp that selects nothing", "+3.1 % <!-- at: data/y/s2.txt /nowhere/ -->", "selects no line"},
		{"a table row's at: before its last |", "| ×1 | 4883 | −37.0 % | p=0.008 <!-- at: s1.txt /veth-routing/ --> |", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := checkBlock(block{raw: tc.block, line: 1}, map[string]bool{"105%": true}, outputs)
			got := strings.Join(errs, "\n")
			if tc.err == "" && got != "" || tc.err != "" && !strings.Contains(got, tc.err) {
				t.Errorf("checkBlock(%q):\n%s\nwant %q", tc.block, got, tc.err)
			}
		})
	}
}

func TestFigureSigns(t *testing.T) {
	for _, tc := range []struct {
		in   string
		sign []byte
	}{
		{"+19.7 %", []byte{'+'}},
		{"−24.6 %", []byte{'-'}},
		{"-10.3%", []byte{'-'}},
		{"31 %", []byte{0}},
		{"10–15 %", []byte{0, 0}},
		{"−5 – +3 %", []byte{'-', '+'}},
	} {
		figs := figures(tc.in)
		if len(figs) != len(tc.sign) {
			t.Errorf("figures(%q) = %+v", tc.in, figs)
			continue
		}
		for i, f := range figs {
			if f.sign != tc.sign[i] {
				t.Errorf("figures(%q)[%d] sign %q, want %q", tc.in, i, f.sign, tc.sign[i])
			}
		}
	}
}
