package profilecmd

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/internal/testutil"
)

func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "--output: give the pprof file"},
		{[]string{"-o", "x.pb.gz"}, "give --duration, or a command"},
		{[]string{"-o", "x.pb.gz", "--hz", "0", "--duration", "1s"}, "--hz 0: give 1..10000"},
		{[]string{"-o", "x.pb.gz", "--duration", "bogus"}, "invalid argument"},
	} {
		_, stderr, code := clitest.Execute(t, NewCommand, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestProfileCommand samples the machine while a command runs and checks
// the file, the flamegraph and the breakdown printed.
func TestProfileCommand(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if err := profile.Probe(); errors.Is(err, profile.ErrNotSupported) {
		t.Skip(err)
	}
	testutil.NeedProgram(t, "sleep")
	sleep := "sleep"
	dir := t.TempDir()
	out, svg := filepath.Join(dir, "cpu.pb.gz"), filepath.Join(dir, "cpu.svg")
	stdout, stderr, code := clitest.Execute(t, NewCommand, "-o", out, "--svg", svg, "--", sleep, "0.3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, err := profile.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if p.Samples == 0 {
		t.Error("no samples in the profile")
	}
	// A family per line; which ones depends on what else the machine runs
	// (a busy host has no sched_idle).
	if !strings.Contains(stdout, "samples over") || !strings.Contains(stdout, "CPU by family") || strings.Count(stdout, "\n") < 2 {
		t.Errorf("breakdown not printed:\n%s", stdout)
	}
	if _, _, code := clitest.Execute(t, NewCommand, "-o", filepath.Join(dir, "x.pb.gz"), "--", filepath.Join(dir, "no-such-command")); code != 1 {
		t.Errorf("a command that cannot start: exit %d, want 1", code)
	}
}
