package exportcmd

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clitest"
)

const (
	fixture = "../../export/testdata/results.json"
	goldens = "../../export/testdata/"
)

func execute(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Execute(t, NewCommand, args...)
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "export needs results files"},
		{[]string{fixture}, "--format: required"},
		{[]string{"--format", "xml", fixture}, "--format xml: must be one of csv, openmetrics, prometheus, jsonl"},
		{[]string{"--format", "csv", "--index", "x", fixture}, "--index: only used with --format jsonl"},
		{[]string{"--format", "jsonl", "--index", "Bad Name", fixture}, `--index "Bad Name": must be lowercase (e.g. --index cnibench-results)`},
		{[]string{"--format", "csv", "--job", "x", fixture}, "--job: only used with --push URL"},
		{[]string{"--push", "localhost:9091", fixture}, "--push localhost:9091: want http:// or https:// (e.g. --push http://localhost:9091)"},
		{[]string{"--push", "http://localhost:9091", "--format", "csv", fixture}, "--format: not used with --push"},
		{[]string{"--push", "http://localhost:9091", "--job", "", fixture}, "--job: must not be empty"},
		{[]string{"--push", "http://localhost:9091", "--timeout", "0s", fixture}, "--timeout 0s: must be positive"},
		{[]string{"--format", "csv", "--bogus", fixture}, "unknown flag: --bogus"},
	} {
		_, stderr, code := execute(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("export %v: exit %d, stderr %q: want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBadFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "other.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"someone/else/v3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := execute(t, "--format", "csv", bad)
	if code != 1 || !strings.Contains(stderr, "other.json: unknown schema") {
		t.Errorf("exit %d, stderr %q: want exit 1 naming the file and the schema", code, stderr)
	}
}

// TestFormats: the command writes what the package's golden files hold,
// to standard output and to --out.
func TestFormats(t *testing.T) {
	for format, golden := range map[string]string{
		"csv": "results.csv", "openmetrics": "results.om.txt", "prometheus": "results.prom.txt", "jsonl": "results.jsonl",
	} {
		want, err := os.ReadFile(goldens + golden + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := execute(t, "--format", format, fixture)
		if code != 0 || stdout != string(want) {
			t.Errorf("--format %s: exit %d, stderr %q; stdout differs from %s", format, code, stderr, golden)
		}
		out := filepath.Join(t.TempDir(), "out")
		stdout, _, code = execute(t, "--format", format, "--out", out, fixture)
		got, err := os.ReadFile(out)
		if code != 0 || err != nil || string(got) != string(want) || stdout != "" {
			t.Errorf("--format %s --out: exit %d, %v; file differs from %s or stdout not empty", format, code, err, golden)
		}
	}
}

func TestSeveralFiles(t *testing.T) {
	// The same file twice: CSV and JSON lines concatenate, the exposition
	// formats refuse the duplicate series.
	stdout, _, code := execute(t, "--format", "csv", fixture, fixture)
	one, _, _ := execute(t, "--format", "csv", fixture)
	lines := strings.Split(one, "\n")
	if code != 0 || stdout != one+strings.Join(lines[1:], "\n") {
		t.Errorf("csv of two files: exit %d; want one header and both files' rows", code)
	}
	_, stderr, code := execute(t, "--format", "prometheus", fixture, fixture)
	if code != 1 || !strings.Contains(stderr, "same series") {
		t.Errorf("prometheus of the same file twice: exit %d, %q: want the duplicate named", code, stderr)
	}
}

func TestPush(t *testing.T) {
	var path, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		path, body = r.URL.Path, string(b)
		if r.URL.Path == "/fail/metrics/job/cnibench/instance/lab-host" {
			http.Error(w, "no such thing\nmore", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	_, stderr, code := execute(t, "--push", srv.URL, fixture)
	want, _ := os.ReadFile(goldens + "results.prom.txt.golden")
	if code != 0 || path != "/metrics/job/cnibench/instance/lab-host" || body != string(want) {
		t.Errorf("push: exit %d, %q, path %s: want the prometheus text at /metrics/job/cnibench/instance/lab-host", code, stderr, path)
	}
	_, stderr, code = execute(t, "--push", srv.URL+"/fail", fixture)
	if code != 1 || !strings.HasSuffix(stderr, ": 404 Not Found: no such thing\n") {
		t.Errorf("push to a 404: exit %d, %q: want the status and the body's first line", code, stderr)
	}
}

// A file with nothing a format exports says so in one line and exits 1.
func TestNothingToExport(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noSummary := write("nosum.json", `{"schema":"cnibench/results/v1","runs":[{"labels":{"test":"tcp_rr"},"repeats":[{"index":0,"metrics":{"trans_per_sec":10}}]}]}`)
	empty := write("empty.json", `{"schema":"cnibench/results/v1","runs":[]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "prometheus", noSummary}, "hold no summaries"},
		{[]string{"--format", "openmetrics", noSummary}, "--format csv or jsonl exports the raw repeats"},
		{[]string{"--push", "http://127.0.0.1:1", noSummary}, "hold no summaries"},
		{[]string{"--format", "csv", empty}, "hold no measured value"},
	} {
		_, stderr, code := execute(t, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("export %v: exit %d, stderr %q: want exit 1 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	// The raw repeats of the file without summaries still export.
	if stdout, stderr, code := execute(t, "--format", "csv", noSummary); code != 0 || !strings.Contains(stdout, "trans_per_sec") {
		t.Errorf("csv of repeats without summaries: exit %d, %q %q", code, stdout, stderr)
	}
}
