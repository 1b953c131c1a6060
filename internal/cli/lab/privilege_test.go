package labcmd

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
)

// Without root every lab command says so in suite's one line, before it
// touches anything, and status never claims "no lab".
func TestNonRootSaysSoFirst(t *testing.T) {
	for _, args := range [][]string{{"up"}, {"up", "--datapaths", "baseline"}, {"down"}, {"status"}, {"datapaths"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			c := newCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				privileges{geteuid: func() int { return 1000 }})
			c.SilenceUsage, c.SilenceErrors = true, true
			c.SetArgs(args)
			c.SetOut(&out)
			c.SetErr(&errOut)
			err := c.ExecuteContext(context.Background())
			want := "the lab needs root (network namespaces, netfilter, BPF): run as root, e.g. sudo cnibench lab " + args[0]
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v, want %q", err, want)
			}
			if clierr.ExitCode(err) == 0 || clierr.ExitCode(err) == 2 {
				t.Errorf("exit code %d: want a failure, not a usage error", clierr.ExitCode(err))
			}
			if out.Len() > 0 {
				t.Errorf("printed %q before the privilege error", out.String())
			}
		})
	}
}

// Bad flags are still usage errors for non-root users (checked first).
func TestNonRootBadFlagIsUsage(t *testing.T) {
	var out bytes.Buffer
	c := newCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out},
		privileges{geteuid: func() int { return 1000 }})
	c.SilenceUsage, c.SilenceErrors = true, true
	c.SetArgs([]string{"up", "--mtu", "10"})
	c.SetOut(&out)
	c.SetErr(&out)
	if err := c.ExecuteContext(context.Background()); clierr.ExitCode(err) != 2 {
		t.Fatalf("err = %v (exit %d), want a usage error", err, clierr.ExitCode(err))
	}
}
