package comparecmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

func TestFlamegraphFlag(t *testing.T) {
	dir := t.TempDir()
	o := reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}}
	for name, shift := range map[string]map[string]float64{"old": nil, "new": {"netfilter": 4}} {
		o.Shift = shift
		set := reporttest.ProfiledSet(o)
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := result.Write(&buf, set); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := reporttest.WriteProfiles(set, d); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	stdout, stderr, code := execute(t, "--flamegraph", "flames", "old/results.json", "new/results.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"+4.0 pp", "Differential flamegraphs (OLD → NEW):", "flames/veth-routing.cross-node.tcp_rr.1.1500.svg", "flames/ebpf-host-routing.cross-node.tcp_rr.1.1500.svg"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "flames", "veth-routing.cross-node.tcp_rr.1.1500.svg")); err != nil {
		t.Error(err)
	}
	// --by datapath: each datapath against the baseline, in one file.
	stdout, stderr, code = execute(t, "--flamegraph", "by", "--by", "datapath", "--baseline", "veth-routing", "old/results.json")
	if code != 0 {
		t.Fatalf("--by with --flamegraph: exit %d: %s", code, stderr)
	}
	want := filepath.Join("by", "veth-routing-vs-ebpf-host-routing.cross-node.tcp_rr.1.1500.svg")
	if !strings.Contains(stdout, want) {
		t.Errorf("output lacks %q:\n%s", want, stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
		t.Error(err)
	}
	_, stderr, code = execute(t, "--flamegraph", "by", "--by", "datapath", "old/results.json", "new/results.json")
	if code != 2 {
		t.Errorf("--by with two files: exit %d, %q; want a usage error", code, stderr)
	}
}
