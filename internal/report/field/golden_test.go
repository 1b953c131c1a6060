package field

import (
	"bytes"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// committed is the real data the golden files are made of: two CNIs of the
// lab-vs-real runs (docs/findings.md §12) and a CNI that could not run.
const committed = "../../../docs/data/lab-vs-real-2026-11-25"

func goldenInputs(t *testing.T) []Input {
	t.Helper()
	var inputs []Input
	for _, name := range []string{"k8s-flannel-vxlan/results.json.gz", "k8s-cilium-native/results.json.gz"} {
		set, err := result.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, Input{Name: name, Set: set}) // names as a reader sees them, stable
	}
	set, err := result.ReadFile("testdata/weave-not-measured.json")
	if err != nil {
		t.Fatal(err)
	}
	return append(inputs, Input{Name: "weave-not-measured.json", Set: set})
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	reporttest.Golden(t, path, got, *update)
}

func TestGolden(t *testing.T) {
	f, err := New(goldenInputs(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file   string
		render func(*bytes.Buffer) error
	}{
		{"testdata/field.md.golden", func(b *bytes.Buffer) error { return Markdown(b, f) }},
		{"testdata/field.txt.golden", func(b *bytes.Buffer) error { return Text(b, f, false) }},
	} {
		var a, b bytes.Buffer
		if err := tc.render(&a); err != nil {
			t.Fatal(err)
		}
		if err := tc.render(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two renderings differ", tc.file)
		}
		checkGolden(t, tc.file, a.Bytes())
	}
	var h bytes.Buffer
	if err := HTML(&h, f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h1>cnibench field report</h1>", `id="summary"`, `id="security"`, `id="footprint"`, `id="mtu"`, "weave (fastdp)"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// The files given in another order give the entries in that order, and
// nothing else changes but the order.
func TestOrderFollowsArguments(t *testing.T) {
	in := goldenInputs(t)
	f, err := New([]Input{in[1], in[0], in[2]})
	if err != nil {
		t.Fatal(err)
	}
	if f.Measured[0].CNI != "cilium" || f.Measured[1].CNI != "flannel" {
		t.Errorf("entries %s, %s: want the arguments' order", f.Measured[0].Name, f.Measured[1].Name)
	}
}
