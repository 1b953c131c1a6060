package reportcmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clitest"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/report/reporttest"
	"github.com/cnibench/cnibench/pkg/result"
)

const fixture = "../../report/testdata/results.json"

func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Execute(t, NewCommand, args...)
}

func render(t *testing.T, f func(*bytes.Buffer, *result.Set) error) string {
	t.Helper()
	set, err := result.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := f(&b, set); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFormats(t *testing.T) {
	text := render(t, func(b *bytes.Buffer, s *result.Set) error { return report.Text(b, s, false) })
	md := render(t, func(b *bytes.Buffer, s *result.Set) error { return report.Markdown(b, s) })
	html := render(t, func(b *bytes.Buffer, s *result.Set) error { return report.HTML(b, s) })
	tests := []struct {
		args []string
		want string
	}{
		{[]string{fixture}, text}, // not a terminal: no colour
		{[]string{"--format", "text", fixture}, text},
		{[]string{"--format", "md", fixture}, md},
		{[]string{"--format", "html", fixture}, html},
		// a directory holding results.json, as suite --out writes it
		{[]string{filepath.Dir(fixture)}, text},
	}
	for _, tt := range tests {
		out, errOut, code := execute(t, tt.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errOut)
		}
		if out != tt.want {
			t.Errorf("%v: output differs from the report package's", tt.args)
		}
	}
}

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	for name, want := range map[string]string{"r.html": "<!DOCTYPE html>", "r.md": "# cnibench report", "r.txt": "cnibench report\n"} {
		path := filepath.Join(dir, name)
		out, errOut, code := execute(t, fixture, "-o", path)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if out != "" || !strings.Contains(errOut, "wrote "+path) {
			t.Errorf("stdout %q stderr %q", out, errOut)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), want) {
			t.Errorf("%s starts with %q, want %q", name, string(data[:min(40, len(data))]), want)
		}
		if bytes.Contains(data, []byte("\x1b[")) {
			t.Errorf("%s contains ANSI escapes", name)
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("[1,2"), 0o644); err != nil {
		t.Fatal(err)
	}
	noschema := filepath.Join(dir, "noschema.json")
	if err := os.WriteFile(noschema, []byte(`{"runs":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", nil, 2, "report needs a results file (or two or more, one per CNI, for a field report), got 0 arguments"},
		// Two files are a field report, which needs runs labelled by CNI.
		{"two files", []string{fixture, fixture}, 2, `129 of its 129 runs carry no "cni" label`},
		{"bad format", []string{"--format", "pdf", fixture}, 2, "--format pdf: must be html, md or text"},
		{"missing", []string{filepath.Join(dir, "nope.json")}, 1, "nope.json: no such file or directory"},
		{"not JSON", []string{bad}, 1, bad + ": not a cnibench JSON document"},
		{"no schema", []string{noschema}, 1, noschema + `: unknown schema: the document has no "schema" field`},
		{"directory without results", []string{dir}, 1, dir + ": a directory without results.json or results.json.gz"},
		{"unwritable output", []string{fixture, "-o", filepath.Join(dir, "no", "such", "dir", "r.html")}, 1, "no such file or directory"},
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
				t.Errorf("stdout not empty: %d bytes", len(out))
			}
		})
	}
}

func TestUseColor(t *testing.T) {
	if useColor(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if useColor(f) {
		t.Error("a regular file is not a terminal")
	}
}

// A subset run without the baseline still reports, and says in one line
// why there is no graded summary and how to get one.
func TestSubsetWithoutBaseline(t *testing.T) {
	set, err := result.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var runs []result.Run
	for _, r := range set.Runs {
		if r.Labels["datapath"] == "veth-routing" || r.Labels["datapath"] == "ebpf-host-routing" {
			runs = append(runs, r)
		}
	}
	set.Runs = runs
	path := filepath.Join(t.TempDir(), "subset.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.Write(f, set); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "md", "html"} {
		out, errOut, code := execute(t, "--format", format, path)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		note := report.NoBaselineNote
		if format == "html" {
			note = strings.ReplaceAll(note, `"`, "&#34;")
		}
		if format == "md" {
			note = strings.ReplaceAll(note, "_", `\_`)
		}
		if !strings.Contains(out, note) {
			t.Errorf("%s: the no-baseline note is missing", format)
		}
	}
}

func TestReportFlamegraphs(t *testing.T) {
	dir := t.TempDir()
	set := reporttest.ProfiledSet(reporttest.ProfileOptions{Datapaths: []string{"veth-routing", "ebpf-host-routing"}, Tests: []string{"tcp_rr"}})
	var buf bytes.Buffer
	if err := result.Write(&buf, set); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "results.json")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reporttest.WriteProfiles(set, dir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out", "report.html")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := clitest.Execute(t, NewCommand, in, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), `class="flame" width=`); n != 3 {
		t.Errorf("report.html has %d inline flamegraphs, want 3", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "profiles", "veth-routing.tcp_rr.svg")); err != nil {
		t.Errorf("standalone flamegraph beside the output: %v", err)
	}
}

// A file with more runs than a report reads is refused in one line, at
// once, not drawn for minutes.
func TestTooManyRuns(t *testing.T) {
	set := &result.Set{Schema: result.SchemaResults}
	for i := 0; i <= report.MaxRuns; i++ {
		set.Runs = append(set.Runs, result.Run{Labels: map[string]string{"datapath": "d", "test": "tcp_rr", "flows": strconv.Itoa(i)}})
	}
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.Write(f, set); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, stderr, code := execute(t, path)
	if code != 1 || !strings.Contains(stderr, fmt.Sprintf("holds %d runs; a report reads at most %d", report.MaxRuns+1, report.MaxRuns)) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
