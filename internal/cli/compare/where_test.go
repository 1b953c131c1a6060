package comparecmd

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func TestParseWhere(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string // "" when it must fail
	}{
		{[]string{"path=cross-node"}, "path=cross-node"},
		{[]string{"path=cross-node,flows=1", "datapath=a|b"}, "datapath=a|b flows=1 path=cross-node"},
		{[]string{" path = cross-node , "}, "path=cross-node"},
		{[]string{"path"}, ""},
		{[]string{"=x"}, ""},
		{[]string{"path="}, ""},
		{[]string{"path=|"}, ""},
	} {
		w, err := parseWhere(tc.in)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "--where") {
				t.Errorf("parseWhere(%q) = %v, %v; want an error naming --where", tc.in, w, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseWhere(%q): %v", tc.in, err)
			continue
		}
		var parts []string
		for _, k := range []string{"datapath", "flows", "path"} {
			if vs, ok := w[k]; ok {
				parts = append(parts, k+"="+strings.Join(vs, "|"))
			}
		}
		if got := strings.Join(parts, " "); got != tc.want {
			t.Errorf("parseWhere(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWhereFilter(t *testing.T) {
	run := func(dp, path string) result.Run {
		return result.Run{Labels: map[string]string{"datapath": dp, "path": path}}
	}
	set := &result.Set{Runs: []result.Run{
		run("baseline", "node-to-node"), run("a", "cross-node"), run("a", "same-node"), run("b", "cross-node"),
	}}
	names := func(s *result.Set) string {
		var out []string
		for _, r := range s.Runs {
			out = append(out, r.Labels["datapath"]+"/"+r.Labels["path"])
		}
		return strings.Join(out, " ")
	}
	w, _ := parseWhere([]string{"path=cross-node"})
	got, err := w.filter(set, "datapath", "", "x.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "baseline/node-to-node a/cross-node b/cross-node"; names(got) != want {
		t.Errorf("--by datapath --where path=cross-node kept %q, want %q (the baseline is kept)", names(got), want)
	}
	if len(set.Runs) != 4 {
		t.Error("filter changed its input")
	}
	got, err = w.filter(set, "", "", "x.json")
	if err != nil || names(got) != "a/cross-node b/cross-node" {
		t.Errorf("file mode: kept %q, %v", names(got), err)
	}
	w, _ = parseWhere([]string{"datapath=c"})
	if _, err := w.filter(set, "datapath", "a", "x.json"); err == nil || !strings.Contains(err.Error(), "no run of x.json") {
		t.Errorf("a filter that keeps only the baseline: %v, want an error", err)
	}
	if got, err := (where{}).filter(set, "", "", "x.json"); err != nil || got != set {
		t.Errorf("no --where must return the set itself")
	}
}
