// Package clitest is the CLI's test helper: it runs a subcommand the way
// cnibench's top level does and returns what the process would print and
// its exit code. It lives next to the CLI so that internal/testutil, which
// every package's tests use, does not import the CLI.
package clitest

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
)

// Execute runs the subcommand that newCmd builds with args, as the top level
// would: flag errors are usage errors, the error is printed once on stderr,
// and the exit code is the one the process would have.
func Execute(t testing.TB, newCmd func(*slog.Logger, streams.IOStreams) *cobra.Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := newCmd(slog.New(slog.NewTextHandler(io.Discard, nil)), streams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	c.SilenceUsage, c.SilenceErrors = true, true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return clierr.Usagef("%v", err) })
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	err := c.Execute()
	if err != nil {
		errOut.WriteString("cnibench: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), clierr.ExitCode(err)
}
