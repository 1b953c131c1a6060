package comparecmd

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clitest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtures are the report package's synthetic sets.
var fixtures = map[string]string{
	"old.json": "../../report/testdata/results.json",
	"new.json": "../../report/testdata/results-new.json",
	// Real runs of one CNI per cluster (docs/findings.md §12), for --by cni.
	"flannel-vxlan.json.gz":   "../../../docs/data/lab-vs-real-2026-11-25/k8s-flannel-vxlan/results.json.gz",
	"flannel-host-gw.json.gz": "../../../docs/data/lab-vs-real-2026-11-25/k8s-flannel-host-gw/results.json.gz",
	"cilium-native.json.gz":   "../../../docs/data/lab-vs-real-2026-11-25/k8s-cilium-native/results.json.gz",
}

// inTemp copies the fixtures into a temporary working directory so the
// file names in the output are short and stable.
func inTemp(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for name, src := range fixtures {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"schema":"cnibench/results/v1","runs":[{"labels":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"schema":"someone/else/v3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
}

// execute runs `cnibench compare args...` the way the root command does.
func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Execute(t, NewCommand, args...)
}

func golden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		_ = os.WriteFile(filepath.Join(goldenDir, name+".got"), []byte(got), 0o644)
		t.Errorf("output differs from %s; wrote %s.got (diff them, or run go test -update if the change is intended)", path, name)
	}
}

var goldenDir string

func TestMain(m *testing.M) {
	flag.Parse()
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	goldenDir = filepath.Join(wd, "testdata")
	os.Exit(m.Run())
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"files.text", []string{"old.json", "new.json"}},
		{"files.md", []string{"--format", "md", "old.json", "new.json"}},
		{"three-files.text", []string{"--metrics", "throughput_bits_per_sec", "old.json", "new.json", "old.json"}},
		{"datapath.text", []string{"--by", "datapath", "old.json"}},
		{"datapath.md", []string{"--by", "datapath", "--format", "md", "old.json"}},
		{"datapath-veth.text", []string{"--by", "datapath", "--baseline", "veth-routing", "--metrics", "trans_per_sec,cpu_us_per_trans", "old.json"}},
		// Across files, one CNI per cluster: the committed lab-vs-real runs.
		{"by-cni.text", []string{"--by", "cni", "--baseline", "flannel", "--where", "flows=1", "--metrics", "trans_per_sec,throughput_bits_per_sec",
			"flannel-vxlan.json.gz", "cilium-native.json.gz"}},
		{"by-cni-mode.md", []string{"--by", "cni,cni_mode", "--baseline", "flannel,vxlan", "--where", "path=cross-node,flows=8", "--format", "md",
			"flannel-vxlan.json.gz", "flannel-host-gw.json.gz"}},
		// Sweeps read as curves (writeSweeps).
		{"curves-by-mechanism.text", []string{"--by", "mechanism", "--baseline", "none", "egress.json"}},
		{"curves-files.text", []string{"--metrics", "filter_setup_seconds,trans_per_sec", "egress.json", "egress-new.json"}},
		{"curves-files.md", []string{"--format", "md", "--metrics", "latency_us_p99", "egress.json", "egress-new.json"}},
		{"curves-by-cni.text", []string{"--by", "cni", "--baseline", "calico", "--metrics", "filter_setup_seconds,latency_us_p99", "calico.json", "cilium.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inTemp(t)
			writeSweeps(t)
			out, errOut, code := execute(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, bad := range []string{"NaN", "Inf", "%!"} {
				if strings.Contains(out, bad) {
					t.Errorf("output contains %q", bad)
				}
			}
			golden(t, tt.name, out)
		})
	}
}

func TestJSON(t *testing.T) {
	inTemp(t)
	out, errOut, code := execute(t, "--format", "json", "old.json", "new.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Schema string
		By     string
		Base   string
		Tables []struct {
			Metric string
			Unit   string
			Better string
			Rows   []struct {
				Labels   map[string]string
				Base     *struct{ Median float64 }
				Compared []struct {
					DeltaPct    *float64 `json:"delta_pct"`
					P           *float64
					Significant bool
					Change      string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if doc.Schema != "cnibench/compare/v1" || doc.By != "file" || doc.Base != "old.json" {
		t.Errorf("header %q %q %q", doc.Schema, doc.By, doc.Base)
	}
	var better, worse, none int
	for _, tb := range doc.Tables {
		for _, r := range tb.Rows {
			for _, c := range r.Compared {
				switch c.Change {
				case "better":
					better++
				case "worse":
					worse++
				case "none":
					none++
				}
				if c.Significant && (c.P == nil || *c.P > 0.05) {
					t.Errorf("%v: significant with p=%v", r.Labels, c.P)
				}
			}
		}
	}
	// ebpf-host-routing got faster, vxlan slower in the new set.
	if better == 0 || worse == 0 || none == 0 {
		t.Errorf("better/worse/none = %d/%d/%d, want all > 0", better, worse, none)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", nil, 2, "compare needs results files"},
		{"one file", []string{"old.json"}, 2, "at least two files"},
		{"bad format", []string{"--format", "pdf", "old.json", "new.json"}, 2, "--format pdf: must be text, md, json or junit"},
		{"unknown label", []string{"--by", "colour", "old.json"}, 2, "--by colour: no run in old.json has that label (labels: datapath, flows"},
		{"by without baseline", []string{"--by", "test", "old.json"}, 2, "--baseline: name the reference test for --by test (values: tcp_stream"},
		{"by datapath, two files", []string{"--by", "datapath", "old.json", "new.json"}, 2, "one results file; got 2 files"},
		{"baseline without by", []string{"--baseline", "bridge", "old.json", "new.json"}, 2, "--baseline bridge: only used with --by LABEL"},
		{"by cni, one CNI in two files", []string{"--by", "cni", "--baseline", "flannel", "flannel-vxlan.json.gz", "flannel-host-gw.json.gz"}, 2,
			"flannel-vxlan.json.gz and flannel-host-gw.json.gz both have runs with cni=flannel (two configurations of one CNI: --by cni,cni_mode)"},
		{"by cni, unknown baseline", []string{"--by", "cni", "--baseline", "weave", "flannel-vxlan.json.gz", "cilium-native.json.gz"}, 2,
			"--baseline weave: flannel-vxlan.json.gz, cilium-native.json.gz have no runs with cni=weave (values: cilium, flannel)"},
		{"by cni, file without the label", []string{"--by", "cni", "--baseline", "flannel", "old.json", "new.json"}, 2,
			"--by cni: no run in old.json, new.json has that label"},
		{"unknown baseline", []string{"--by", "datapath", "--baseline", "calico", "old.json"}, 2, "--baseline calico: old.json has no runs with datapath=calico (values: baseline, bridge"},
		{"unknown metric", []string{"--metrics", "goodput", "old.json", "new.json"}, 2, "--metrics goodput: no run has this metric (available: cpu_pct_per_100gbit"},
		{"unknown flag", []string{"--colour", "old.json", "new.json"}, 2, "unknown flag: --colour"},
		{"bad rule", []string{"--fail-on", "faster", "old.json", "new.json"}, 2, `--fail-on "faster": not a rule; write worse>5%`},
		{"bad rule sign", []string{"--fail-on", "trans_per_sec>-5%", "old.json", "new.json"}, 2, "the sign contradicts the comparison"},
		{"share in percent", []string{"--fail-on", "cpu_share_netfilter>+5%", "old.json", "new.json"}, 2, "a CPU-profile share changes in percentage points: write pp"},
		{"rule metric not compared", []string{"--fail-on", "goodput>+5%", "old.json", "new.json"}, 2, "--fail-on goodput>+5%: goodput is not compared"},
		{"bad alpha", []string{"--fail-on", "default", "--fail-alpha", "0.7", "old.json", "new.json"}, 2, "--fail-alpha 0.7: must be between 0 and 0.5"},
		{"negative alpha without gate", []string{"--fail-alpha", "-1", "old.json", "new.json"}, 2, "--fail-alpha -1: must be between 0 and 0.5"},
		{"alpha NaN", []string{"--fail-on", "default", "--fail-alpha", "NaN", "old.json", "new.json"}, 2, "--fail-alpha NaN: must be between 0 and 0.5"},
		{"alpha 1", []string{"--fail-alpha", "1", "old.json", "new.json"}, 2, "--fail-alpha 1: must be between 0 and 0.5"},
		{"junit file not writable", []string{"--fail-on", "default", "--junit", "no/such/dir/g.xml", "old.json", "new.json"}, 2, "no/such/dir/g.xml: open no/such/dir/g.xml: no such file or directory"},
		{"junit without gate", []string{"--format", "junit", "old.json", "new.json"}, 2, "--format junit: needs the gate; add --fail-on"},
		{"markdown file without gate", []string{"--markdown", "x.md", "old.json", "new.json"}, 2, "--markdown x.md: written by the gate; add --fail-on"},
		{"missing file", []string{"old.json", "nope.json"}, 2, "open nope.json: no such file or directory"},
		{"truncated file", []string{"old.json", "bad.json"}, 2, "bad.json: not a cnibench JSON document: unexpected end of JSON input"},
		{"foreign schema", []string{"old.json", "other.json"}, 2, `other.json: unknown schema "someone/else/v3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inTemp(t)
			out, errOut, code := execute(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q lacks %q", errOut, tt.want)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("error is not one line: %q", errOut)
			}
			if out != "" {
				t.Errorf("stdout not empty on error: %q", out)
			}
		})
	}
}

// The gate: new.json has regressions (vxlan got slower) past 5 %, so
// compare exits 1 and lists them; its three formats are golden files.
// The same file against itself passes (exit 0).
func TestGate(t *testing.T) {
	gate := []string{"--fail-on", "worse>5%", "--metrics", "trans_per_sec,latency_us_p99"}
	for _, tc := range []struct{ name, format string }{
		{"gate-text", "text"}, {"gate-md", "md"}, {"gate-junit", "junit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inTemp(t)
			out, errOut, code := execute(t, append(gate, "--format", tc.format, "old.json", "new.json")...)
			if code != 1 {
				t.Fatalf("exit code %d, want 1 (stderr %q)", code, errOut)
			}
			if !strings.Contains(errOut, "regression gate failed:") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("stderr %q: want one line saying the gate failed", errOut)
			}
			golden(t, tc.name, out)
		})
	}
	t.Run("files besides", func(t *testing.T) {
		inTemp(t)
		out, _, code := execute(t, append(gate, "--junit", "g.xml", "--markdown", "g.md", "old.json", "new.json")...)
		if code != 1 || !strings.Contains(out, "Regression gate: FAIL:") {
			t.Fatalf("exit %d, output lacks the gate's verdict:\n%s", code, out)
		}
		for _, f := range []string{"g.xml", "g.md"} {
			if b, err := os.ReadFile(f); err != nil || len(b) == 0 {
				t.Errorf("%s: %v (%d bytes)", f, err, len(b))
			}
		}
	})
	t.Run("a file that cannot be written exits 2", func(t *testing.T) {
		inTemp(t)
		_, errOut, code := execute(t, append(gate, "--markdown", "/dev/full", "old.json", "new.json")...)
		if code != 2 || !strings.Contains(errOut, "write /dev/full: ") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("exit %d, stderr %q: want 2 and one line naming /dev/full", code, errOut)
		}
	})
	t.Run("a refused run leaves no file", func(t *testing.T) {
		inTemp(t)
		_, _, code := execute(t, "--fail-on", "default", "--junit", "g.xml", "old.json", "nope.json")
		if _, err := os.Stat("g.xml"); code != 2 || !os.IsNotExist(err) {
			t.Errorf("exit %d, g.xml: %v; want 2 and no file", code, err)
		}
	})
	t.Run("same build passes", func(t *testing.T) {
		inTemp(t)
		out, errOut, code := execute(t, "--fail-on", "default", "old.json", "old.json")
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if !strings.Contains(out, "Regression gate: PASS: 0 metrics of 353 judged past --fail-on worse>5%, in 0 cells of 129") {
			t.Errorf("output lacks the passing verdict:\n%s", out)
		}
	})
}

// Several files joined by commas are one side, their repeats pooled.
func TestPooledSides(t *testing.T) {
	inTemp(t)
	out, errOut, code := execute(t, "--metrics", "trans_per_sec", "--format", "json", "old.json,old.json", "new.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Tables []struct {
			Rows []struct {
				Base *struct{ N int } `json:"base"`
			} `json:"rows"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if n := doc.Tables[0].Rows[0].Base.N; n != 10 {
		t.Errorf("pooled side: n=%d, want 10 (5 repeats twice)", n)
	}
	if _, errOut, code := execute(t, "old.json,", "new.json"); code != 2 || !strings.Contains(errOut, "an empty file name") {
		t.Errorf("empty name in a list: exit %d, %q", code, errOut)
	}
}
