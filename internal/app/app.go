// Package app is cnibench's top level: it builds the command tree, runs it
// with a context cancelled on SIGINT/SIGTERM/SIGHUP, prints errors once and maps
// them to exit codes. Nothing below this package exits the process.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli"
	"github.com/cnibench/cnibench/internal/cli/clierr"
)

// stopSignals stop a command the way Ctrl-C does: the context is cancelled,
// what was measured is kept and printed, everything the command created is
// removed, and the exit status is 130. SIGHUP is one of them: a closed
// terminal or SSH session must not leave a lab behind.
func stopSignals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}

// Main runs cnibench with the process's arguments and exits.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	streams := cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	finished := make(chan struct{})
	cmd := cli.NewCommand(logger, streams)
	if stopsAtOnce(cmd, os.Args[1:]) {
		// A command that only reads and computes ends at Ctrl-C at once,
		// however long its input: it holds nothing to clean up.
		go func() {
			if interrupted(ctx, finished) {
				printError(os.Stderr, clierr.ErrInterrupted)
				os.Exit(clierr.ExitCode(clierr.ErrInterrupted))
			}
		}()
	}
	err := execute(ctx, cmd, streams, os.Args[1:])
	close(finished)
	stop()
	os.Exit(clierr.ExitCode(err))
}

// interrupted waits until ctx is done (Ctrl-C) or the command finished,
// and reports whether it was interrupted. Main's stop() cancels ctx too,
// right after finished is closed: a command that has finished was not
// interrupted, whichever the select saw first (its own error and exit
// code stand).
func interrupted(ctx context.Context, finished <-chan struct{}) bool {
	select {
	case <-ctx.Done():
		select {
		case <-finished:
			return false
		default:
			return true
		}
	case <-finished:
		return false
	}
}

// stopsAtOnce tells whether the command args name in cmd's tree is
// annotated clierr.StopAtOnce.
func stopsAtOnce(cmd *cobra.Command, args []string) bool {
	c, _, err := cmd.Find(args)
	return err == nil && c.Annotations[clierr.StopAnnotation] == clierr.StopAtOnce
}

func logLevel() slog.Level {
	if os.Getenv("CNIBENCH_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// Run executes one cnibench command line. Errors are printed once, here, to
// streams.ErrOut, and returned so the caller can pick the exit code.
func Run(ctx context.Context, logger *slog.Logger, streams cli.IOStreams, args []string) error {
	return execute(ctx, cli.NewCommand(logger, streams), streams, args)
}

// execute runs args on the command tree cmd.
func execute(ctx context.Context, cmd *cobra.Command, streams cli.IOStreams, args []string) error {
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		// cobra's own usage errors: exit 2 like every other bad input.
		err = clierr.Usagef("%s", unknownCommand(err.Error()))
	}
	if err != nil {
		printError(streams.ErrOut, err)
	}
	return err
}

func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "cnibench: %v\n", err)
}

// unknownCommand rewrites cobra's multi-line "unknown command" error
// ("...\n\nDid you mean this?\n\trun\n") as one line:
// `unknown command "runn" for "cnibench"; did you mean "run"?`.
func unknownCommand(msg string) string {
	first, rest, _ := strings.Cut(msg, "\n")
	first = strings.TrimSpace(first)
	_, after, ok := strings.Cut(rest, "Did you mean this?")
	if !ok {
		return first + " (see 'cnibench --help')"
	}
	var suggestions []string
	for _, l := range strings.Split(after, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			suggestions = append(suggestions, fmt.Sprintf("%q", l))
		}
	}
	if len(suggestions) == 0 {
		return first + " (see 'cnibench --help')"
	}
	return first + "; did you mean " + strings.Join(suggestions, " or ") + "?"
}
