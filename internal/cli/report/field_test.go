package reportcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed lab-vs-real runs (docs/data): one file per CNI.
const data = "../../../docs/data/lab-vs-real-2026-11-25"

func TestFieldFormats(t *testing.T) {
	flannel := filepath.Join(data, "k8s-flannel-vxlan") // a directory: its results.json.gz
	cilium := filepath.Join(data, "k8s-cilium-native", "results.json.gz")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{flannel, cilium}, "cnibench field report\n"},
		{[]string{"--format", "md", flannel, cilium}, "# cnibench field report\n"},
		{[]string{"--format", "html", flannel, cilium}, "<!DOCTYPE html>"},
	} {
		out, errOut, code := execute(t, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if !strings.HasPrefix(out, tc.want) {
			t.Errorf("%v: output starts %q, want %q", tc.args, out[:min(40, len(out))], tc.want)
		}
		if !strings.Contains(out, "k8s-flannel-vxlan/results.json.gz") {
			t.Errorf("%v: the directory was not read as its results.json.gz", tc.args)
		}
	}
	path := filepath.Join(t.TempDir(), "field.md")
	_, errOut, code := execute(t, flannel, cilium, "-o", path)
	if code != 0 || !strings.Contains(errOut, "wrote "+path) {
		t.Fatalf("-o: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "# cnibench field report") {
		t.Errorf("-o field.md: %v, %q", err, string(b[:min(40, len(b))]))
	}
}

func TestFieldErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	flannel := filepath.Join(data, "k8s-flannel-vxlan", "results.json.gz")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no cni label", []string{flannel, filepath.Join(data, "lab-vxlan", "results.json.gz")}, 2,
			`lab-vxlan/results.json.gz: 18 of its 18 runs carry no "cni" label`},
		{"same configuration twice", []string{flannel, filepath.Join(data, "k8s-flannel-vxlan-mtu1500", "results.json.gz")}, 2,
			"k8s-flannel-vxlan/results.json.gz and " + data + "/k8s-flannel-vxlan-mtu1500/results.json.gz both hold runs of flannel v0.28.10 (vxlan)"},
		{"bad format", []string{"--format", "pdf", flannel, flannel}, 2, "--format pdf: must be html, md or text"},
		{"directory without results", []string{flannel, empty}, 1, "empty: a directory without results.json or results.json.gz"},
		{"missing file", []string{flannel, filepath.Join(dir, "nope.json")}, 1, "nope.json: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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

// Committed egress-filter sweeps of one CNI in several configurations
// (docs/data/egress-cilium120-2026-12-04): the field report draws one curve
// per configuration and mechanism.
func TestFieldSweep(t *testing.T) {
	d := "../../../docs/data/egress-cilium120-2026-12-04"
	args := []string{"--format", "html", filepath.Join(d, "cilium120-native"), filepath.Join(d, "cilium120-vxlan")}
	out, errOut, code := execute(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`<section id="scenario-egress-filter">`, `class="chart chart-scenario"`,
		"cilium native routing: networkpolicy", "cilium tunnel vxlan: cilium-policy",
		"Datapaths of the runs that took no part in egress-filter",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the field report lacks %q", want)
		}
	}
}
