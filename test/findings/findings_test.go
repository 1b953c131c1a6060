// Package findings checks docs/findings.md against the data committed
// beside it: text and data cannot drift apart.
//
// A finding's figures come from commands run on committed results. Each
// such command is written in findings.md as an HTML comment
//
//	<!-- check: cnibench compare --by datapath … data/DIR/x.results.json.gz > data/DIR/x.txt -->
//
// (paths relative to docs/; `cnibench …` runs in-process, `go run ../hack/…`
// with the Go toolchain). TestFindings re-runs every command and requires
// its output to equal the committed file after the `>`; with -update it
// rewrites the files instead (never the page).
//
// It then ties every figure the page quotes — percentages, p- and
// q-values, values with a unit or a k/M/G multiplier — to the lines it
// comes from: each block (paragraph, list item, table row) that quotes
// figures names them in a comment `<!-- at: OUT /REGEXP/; OUT /REGEXP/ … -->`
// (tied_test.go), and each figure must be among the numbers of those
// lines at the precision quoted, a signed percentage with its sign.
// Figures that are not measurements (a seed's own, a configured rate) are
// listed in the section in a comment `<!-- not data: 105 %, 1 Gbit/s -->`.
package findings

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/app"
	"github.com/cnibench/cnibench/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the outputs of findings.md's check commands")

const docsDir = "../../docs"

func TestFindings(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(docsDir, "findings.md"))
	if err != nil {
		t.Fatal(err)
	}
	secs := sections(string(text))
	if len(secs) < 2 {
		t.Fatalf("findings.md: found %d sections", len(secs))
	}
	outputs := map[string]string{}
	for i := range secs {
		s := &secs[i]
		for _, c := range s.checks {
			outputs[c.out] = ""
			out, err := runCheck(t, c)
			if err != nil {
				t.Errorf("%s: %q: %v", s.title, c.cmd, err)
				continue
			}
			file := filepath.Join(docsDir, c.out)
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, out, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if want, err := os.ReadFile(file); err != nil {
				t.Errorf("%s: %v (run go test ./test/findings -update)", s.title, err)
			} else if !bytes.Equal(want, out) {
				t.Errorf("%s: %s is not what %q prints on the committed data now:\n%s", s.title, c.out, c.cmd, firstDiff(want, out))
			}
			outputs[c.out] = string(out)
		}
	}
	for _, s := range secs {
		for _, b := range blocks(s.raw) {
			for _, e := range checkBlock(b, s.notData, outputs) {
				t.Errorf("%s: %s", s.title, e)
			}
		}
	}
	for _, l := range dataLinks(string(text)) {
		if _, err := os.Stat(filepath.Join(docsDir, l)); err != nil {
			t.Errorf("findings.md links to %s: %v", l, err)
		}
	}
}

// section is one "## " part of findings.md (the text before the first is
// the first section).
type section struct {
	title   string
	raw     string
	checks  []check
	notData map[string]bool
}

// splitArgs splits a check's command at spaces, as a shell would for
// words and double-quoted strings (a --baseline value with spaces and
// commas); nothing else of a shell's syntax.
func splitArgs(cmd string) ([]string, error) {
	var args []string
	var cur strings.Builder
	in, word := false, false
	for _, r := range cmd {
		switch {
		case r == '"':
			in, word = !in, true
		case r == ' ' && !in:
			if word {
				args = append(args, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteRune(r)
			word = true
		}
	}
	if in {
		return nil, fmt.Errorf("unbalanced double quote in %q", cmd)
	}
	if word {
		args = append(args, cur.String())
	}
	return args, nil
}

type check struct {
	cmd string // the command, as written
	out string // the output file, relative to docs/
}

var (
	checkRe   = regexp.MustCompile(`<!--\s*check:\s*(.+?)\s+>\s+(\S+)\s*-->`)
	notDataRe = regexp.MustCompile(`<!--\s*not data:\s*(.+?)\s*-->`)
	commentRe = regexp.MustCompile(`(?s)<!--.*?-->`)
	fenceRe   = regexp.MustCompile("(?s)```.*?```")
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

func sections(text string) []section {
	var out []section
	cur := section{title: "the introduction"}
	flush := func() {
		out = append(out, cur)
	}
	for _, part := range splitKeep(text, "\n## ") {
		if strings.HasPrefix(part, "## ") {
			flush()
			title, _, _ := strings.Cut(part, "\n")
			cur = section{title: strings.TrimSpace(strings.TrimPrefix(title, "## "))}
		}
		cur.raw += part
	}
	flush()
	for i := range out {
		s := &out[i]
		s.notData = map[string]bool{}
		for _, m := range checkRe.FindAllStringSubmatch(s.raw, -1) {
			s.checks = append(s.checks, check{cmd: m[1], out: m[2]})
		}
		for _, m := range notDataRe.FindAllStringSubmatch(s.raw, -1) {
			for _, f := range strings.Split(m[1], ",") {
				s.notData[normalize(f)] = true
			}
		}
	}
	return out
}

// splitKeep splits text before every occurrence of sep (sep's leading
// newline stays with the previous part).
func splitKeep(text, sep string) []string {
	var parts []string
	for {
		i := strings.Index(text, sep)
		if i < 0 {
			return append(parts, text)
		}
		parts = append(parts, text[:i+1])
		text = text[i+1:]
	}
}

func dataLinks(text string) []string {
	var out []string
	for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
		l, _, _ := strings.Cut(m[1], "#")
		if strings.HasPrefix(l, "data/") {
			out = append(out, l)
		}
	}
	return out
}

// runCheck runs one check command in docs/.
func runCheck(t *testing.T, c check) ([]byte, error) {
	args, err := splitArgs(c.cmd)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	switch {
	case len(args) > 1 && args[0] == "cnibench":
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if err := os.Chdir(docsDir); err != nil {
			return nil, err
		}
		defer func() {
			if err := os.Chdir(wd); err != nil {
				t.Fatal(err)
			}
		}()
		var out, errOut bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := app.Run(ctx, logger, cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args[1:]); err != nil {
			return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(errOut.String()))
		}
		return out.Bytes(), nil
	case len(args) > 2 && args[0] == "go" && args[1] == "run" && strings.HasPrefix(args[2], "../hack/"):
		cmd := exec.CommandContext(ctx, goTool(), args[1:]...)
		cmd.Dir = docsDir
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(errOut.String()))
		}
		return out, nil
	}
	return nil, fmt.Errorf("a check runs `cnibench …` or `go run ../hack/…`")
}

func firstDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: committed %q, now %q", i+1, a, b)
		}
	}
	return "(same lines)"
}

// goTool is the go command of the toolchain running the test (make may
// run it from a GOROOT that is not on PATH), else the one on PATH.
func goTool() string {
	if g := filepath.Join(runtime.GOROOT(), "bin", "go"); runtime.GOROOT() != "" {
		if _, err := os.Stat(g); err == nil {
			return g
		}
	}
	return "go"
}

func TestSplitArgs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"cnibench report  a.json", []string{"cnibench", "report", "a.json"}, false},
		{`cnibench compare --by cni_mode --baseline "bgp, iptables dataplane" a b`, []string{"cnibench", "compare", "--by", "cni_mode", "--baseline", "bgp, iptables dataplane", "a", "b"}, false},
		{`x ""`, []string{"x", ""}, false},
		{`x "open`, nil, true},
	} {
		got, err := splitArgs(tt.in)
		if (err != nil) != tt.err || strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}
