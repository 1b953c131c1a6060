package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

func TestSignedPP(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{18, "+18.0 pp"}, {-12.14, "−12.1 pp"}, {0.01, "+0.0 pp"}, {-0.04, "+0.0 pp"}} {
		if got := signedPP(tc.in); got != tc.want {
			t.Errorf("signedPP(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func profiledInputs(t *testing.T, shift map[string]float64) []Input {
	t.Helper()
	o := reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}}
	old := reporttest.ProfiledSet(o)
	o.Shift = shift
	nw := reporttest.ProfiledSet(o)
	return []Input{{Name: "old/results.json", Set: old}, {Name: "new/results.json", Set: nw}}
}

func TestCompareSharesInPP(t *testing.T) {
	in := profiledInputs(t, map[string]float64{"netfilter": 18})
	r, err := Compare(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	for _, want := range []string{"cpu_share_netfilter", "+18.0 pp (p=0.008 q=0.036 n=5)", "percentage points (pp)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// kernel_other gave the 18 points: −18.0 pp, not −400 %.
	if !strings.Contains(out, "−18.0 pp") {
		t.Errorf("kernel_other's change is not in pp:\n%s", out)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"delta_pp": 18`) {
		t.Errorf("JSON lacks delta_pp 18")
	}
}

func TestCompareProfiledOnOneSide(t *testing.T) {
	in := profiledInputs(t, nil)
	// OLD was not profiled: no cpu_profile label.
	for i := range in[0].Set.Runs {
		delete(in[0].Set.Runs[i].Labels, "cpu_profile")
	}
	r, err := Compare(in, Options{Metrics: []string{result.TransPerSec}})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "2 cells CPU-profiled in new/results.json (NEW) only: not compared") {
		t.Errorf("no note about the cells profiled on one side:\n%s", txt.String())
	}
	for _, tb := range r.Tables {
		for _, row := range tb.Rows {
			for _, c := range row.Cells {
				if c.Compared {
					t.Errorf("a profiled cell was compared with an unprofiled one: %v", row.Labels)
				}
			}
		}
	}
}

func TestWriteFlamegraphs(t *testing.T) {
	dir := t.TempDir()
	in := profiledInputs(t, map[string]float64{"netfilter": 5})
	for i := range in {
		in[i].Name = filepath.Join(dir, in[i].Name)
		if err := reporttest.WriteProfiles(in[i].Set, filepath.Dir(in[i].Name)); err != nil {
			t.Fatal(err)
		}
	}
	// ebpf-host-routing's NEW profile is missing: a note.
	if err := os.Remove(filepath.Join(dir, "new", "profiles", "ebpf-host-routing.tcp_rr.pb.gz")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "flames")
	written, notes, err := WriteFlamegraphs(in, Options{}, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 || filepath.Base(written[0].Path) != "veth-routing.cross-node.tcp_rr.1.1500.svg" {
		t.Fatalf("written %+v, want veth-routing's flamegraph", written)
	}
	data, err := os.ReadFile(written[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("old/results.json (OLD)")) || !bytes.Contains(data, []byte("<script>")) {
		t.Error("the flamegraph does not name OLD or is not interactive")
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "is missing") {
		t.Errorf("notes %q, want one about the missing profile", notes)
	}
	if _, _, err := WriteFlamegraphs(in[:1], Options{}, out); err == nil {
		t.Error("one file: want a usage error")
	}
	if _, _, err := WriteFlamegraphs(in, Options{Mode: ByDatapath}, out); err == nil {
		t.Error("--by: want a usage error")
	}
}
