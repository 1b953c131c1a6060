// Package app is cnibench's top level: it builds the command tree, runs it
// with a context cancelled on SIGINT/SIGTERM, prints errors once and maps
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

	"github.com/cnibench/cnibench/internal/cli"
	"github.com/cnibench/cnibench/internal/cli/clierr"
)

// Main runs cnibench with the process's arguments and exits.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	err := Run(ctx, logger, streams, os.Args[1:])
	stop()
	os.Exit(clierr.ExitCode(err))
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
	cmd := cli.NewCommand(logger, streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		// cobra's own usage errors: exit 2 like every other bad input.
		err = clierr.Usagef("%s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if err != nil {
		printError(streams.ErrOut, err)
	}
	return err
}

func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "cnibench: %v\n", err)
}
