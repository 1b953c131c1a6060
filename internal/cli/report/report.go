// Package report implements `cnibench report`.
package reportcmd

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/pkg/result"
)

type flags struct {
	format string
	output string
	trendFlags
}

// NewCommand returns the report command.
func NewCommand(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &flags{}
	c := &cobra.Command{
		Annotations: map[string]string{clierr.StopAnnotation: clierr.StopAtOnce},
		Use:         "report RESULTS.json | report RUN1 RUN2… (one per CNI) | report --trend RUN…",
		Short:       "Render results as an HTML page, Markdown or a terminal table",
		Long: `Render a cnibench results file.

html: one self-contained page (inline SVG charts, no network access; no scripts
      but the CPU flamegraphs' own):
      a graded summary relative to the node-to-node baseline (a cell whose 95 %
      interval spans two grades names both) and, per datapath, why: statements
      from the run's own counters and costs; bar charts per test
      and flow count with confidence intervals, normalised CPU cost, latency
      percentiles, the MTU sweep and scenario charts, host facts, packet paths,
      skipped items and noise warnings; with CPU profiles (suite --cpu-profile)
      the share of samples per symbol family, stacked bars, the families that
      differ from a reference datapath, and interactive flamegraphs (the
      profiles are read beside RESULTS.json; with -o the standalone SVGs go
      to profiles/ beside the output).
md:   the same tables as Markdown, for a GitHub issue.
text: the same tables for a terminal, within 100 columns (long texts become
      footnotes, wide tables are split; warnings are counted by kind), coloured
      when standard output is a terminal and NO_COLOR is not set.

Without --format the format follows the -o file's extension (.html, .md, .txt),
or is text on standard output.

RUN1 RUN2…: two or more results files (or directories holding results.json
or results.json.gz), one per CNI configuration — runs labelled cni, cni_mode,
cni_version, as cnibench suite --backend kubernetes writes them — side by side
in one "field" report (seed 002): what is compared and what else differs
(machines, start times, settings, a busy host), a graded summary of each CNI
against its own run's node-to-node baseline (cross-node and same-node), the
security checks (NetworkPolicy, encryption), the CNI's footprint, MTU detection,
and the CNIs named but not measured (a file with no runs and skipped entries
labelled cni). Two files of the same configuration, or a file whose runs carry
no cni label, are refused. Same formats and flags as one file.

--trend RUN…: follow metrics across a series of runs (results.json files or
directories holding one, in series order, or by start time with --sort time;
at least 3). Runs are matched across the points by their labels (all, or
--match LABELS), each cell's medians are drawn with their 95 % intervals, and
change points are flagged by E-divisive means with a permutation test
(--alpha, --min-shift), each with the medians before and after, the change
and its direction, and a Mann–Whitney p-value (docs/trends.md). With --out DIR
writes DIR/trend.html and DIR/trend.md; otherwise Markdown (or --format html)
on standard output.`,
		Example: `  cnibench report results.json
  cnibench report results.json -o report.html
  cnibench report --format md results.json > report.md
  cnibench report --format md k8s-flannel/results.json k8s-cilium/ weave-not-measured.json
  cnibench report --trend --out trend/ nightly/2026-01-*/
  cnibench report --trend --sort time --match path,test,flows --metrics throughput_bits_per_sec runs/*/results.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if f.trend {
				return nil // checked by runTrend: the usage error names the fix
			}
			if len(args) == 0 {
				return clierr.Usagef("report needs a results file (or two or more, one per CNI, for a field report), got 0 arguments")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.trend {
				return runTrend(s, f, args)
			}
			if err := f.trendFlags.unused(cmd); err != nil {
				return err
			}
			if len(args) > 1 {
				return runField(s, f, args)
			}
			return run(s, f, args[0])
		},
	}
	c.Flags().StringVar(&f.format, "format", "", "output format: html, md or text (default: from the -o extension, else text)")
	c.Flags().StringVarP(&f.output, "output", "o", "", "write to this file instead of standard output")
	f.trendFlags.add(c)
	return c
}

// outputFormat is --format, or the -o file's extension's, or text.
func outputFormat(f *flags) (string, error) {
	switch f.format {
	case "html", "md", "text":
		return f.format, nil
	case "":
		switch strings.ToLower(filepath.Ext(f.output)) {
		case ".html", ".htm":
			return "html", nil
		case ".md", ".markdown":
			return "md", nil
		}
		return "text", nil
	}
	return "", clierr.Usagef("--format %s: must be html, md or text", f.format)
}

func run(s streams.IOStreams, f *flags, path string) error {
	format, err := outputFormat(f)
	if err != nil {
		return err
	}
	// a directory as the field report takes it: its results.json(.gz)
	path, err = resultsPath(path)
	if err != nil {
		return err
	}
	set, err := result.ReadFile(path)
	if err != nil {
		return err
	}
	if err := report.CheckSize(path, set); err != nil {
		return err
	}
	// CPU profiles (suite --cpu-profile) are read beside the results file;
	// their flamegraphs are inlined in HTML and, with -o, written as
	// standalone SVGs into profiles/ beside the output.
	var fg *report.Flamegraphs
	if format != "text" {
		outDir := ""
		if f.output != "" {
			outDir = filepath.Dir(f.output)
		}
		fg = report.LoadFlamegraphs(set, filepath.Dir(path), outDir)
	}
	var buf bytes.Buffer
	switch format {
	case "html":
		err = report.HTMLWith(&buf, set, fg)
	case "md":
		err = report.MarkdownWith(&buf, set, fg)
	default:
		err = report.Text(&buf, set, f.output == "" && useColor(s.Out))
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	return writeOut(s, f, &buf)
}

// writeOut copies the rendered report to standard output or the -o file.
func writeOut(s streams.IOStreams, f *flags, buf *bytes.Buffer) error {
	if f.output == "" {
		_, err := io.Copy(s.Out, buf)
		return err
	}
	if err := os.WriteFile(f.output, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(s.ErrOut, "wrote %s\n", f.output)
	return nil
}

// useColor: colour only on a terminal, and never with NO_COLOR set.
func useColor(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
