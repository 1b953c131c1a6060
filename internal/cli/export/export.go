// Package export implements `cnibench export`.
package exportcmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/export"
)

type flags struct {
	format   string
	out      string
	index    string
	push     string
	job      string
	instance string
	timeout  time.Duration
}

// Formats are the values of --format.
var formats = []string{"csv", "openmetrics", "prometheus", "jsonl"}

// NewCommand returns the export command.
func NewCommand(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &flags{}
	c := &cobra.Command{
		Annotations: map[string]string{clierr.StopAnnotation: clierr.StopAtOnce},
		Use:         "export --format csv|openmetrics|prometheus|jsonl [--out FILE] RESULTS.json... | export --push URL [--job NAME] RESULTS.json...",
		Short:       "Export results as CSV, OpenMetrics/Prometheus text or Elasticsearch/OpenSearch bulk JSON; push them to a Pushgateway",
		Long: `Export cnibench results (results.json of a suite, or the JSON of one
'cnibench run') into formats other tools ingest. Several files make one
document: their rows, series or documents one after the other, in the order
given.

  csv          one row per measurement (run x repeat x metric): the run's
               identity (results_start, tool_version, tool_commit, host),
               one column per label, repeat, repeat_start, duration_sec,
               metric, unit, value, error
  openmetrics  OpenMetrics 1.0 text: a gauge family cnibench_<metric> per
               metric, one series per run and statistic (label stat: median,
               ci95_low, ci95_high, n), labelled with the run's labels and
               host
  prometheus   the same in the Prometheus text format 0.0.4 (what a
               Pushgateway and node_exporter's textfile collector read)
  jsonl        an Elasticsearch/OpenSearch _bulk body: an index action and
               one document per measurement (--index, default
               cnibench-results)

--push URL sends the prometheus format to a Pushgateway with PUT, replacing
the group /metrics/job/<--job>/instance/<--instance> (the instance is the
results' host name unless set). See docs/export.md.`,
		Example: `  cnibench export --format csv --out results.csv DIR/results.json
  cnibench export --format prometheus --out /var/lib/node_exporter/cnibench.prom DIR/results.json
  cnibench export --format jsonl --index cni-perf DIR/results.json | curl -s -H 'Content-Type: application/x-ndjson' --data-binary @- http://localhost:9200/_bulk
  cnibench export --push http://pushgateway:9091 --job cni-ci DIR/results.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return clierr.Usagef("export needs results files: cnibench export --format csv RESULTS.json (or --push URL RESULTS.json)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), s, f, cmd.Flags().Changed, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.format, "format", "", "output format: "+strings.Join(formats, ", ")+" (required unless --push)")
	fl.StringVarP(&f.out, "out", "o", "", "write to this file (replaced atomically) instead of standard output")
	fl.StringVar(&f.index, "index", export.DefaultIndex, "--format jsonl: the Elasticsearch/OpenSearch index of the bulk actions")
	fl.StringVar(&f.push, "push", "", "push the results to this Pushgateway (base URL, e.g. http://localhost:9091) instead of writing them")
	fl.StringVar(&f.job, "job", "cnibench", "--push: the job of the grouping key")
	fl.StringVar(&f.instance, "instance", "", "--push: the instance of the grouping key (default: the results' host name)")
	fl.DurationVar(&f.timeout, "timeout", export.DefaultPushTimeout, "--push: give up when the Pushgateway has not answered within this time")
	return c
}

func run(ctx context.Context, s streams.IOStreams, f *flags, changed func(string) bool, args []string) error {
	if f.push != "" {
		return push(ctx, s, f, changed, args)
	}
	for _, name := range []string{"job", "instance", "timeout"} {
		if changed(name) {
			return clierr.Usagef("--%s: only used with --push URL", name)
		}
	}
	switch f.format {
	case "csv", "openmetrics", "prometheus", "jsonl":
	case "":
		return clierr.Usagef("--format: required (one of %s), or --push URL", strings.Join(formats, ", "))
	default:
		return clierr.Usagef("--format %s: must be one of %s", f.format, strings.Join(formats, ", "))
	}
	if changed("index") && f.format != "jsonl" {
		return clierr.Usagef("--index: only used with --format jsonl")
	}
	if f.format == "jsonl" {
		if err := export.CheckIndex(f.index); err != nil {
			return clierr.Usagef("--index %q: %v (e.g. --index %s)", f.index, err, export.DefaultIndex)
		}
	}
	in, err := export.ReadFiles(args)
	if err != nil {
		return err
	}
	if err := nothingToExport(in, f.format == "openmetrics" || f.format == "prometheus"); err != nil {
		return err
	}
	var b bytes.Buffer
	switch f.format {
	case "csv":
		err = export.WriteCSV(&b, in)
	case "openmetrics":
		err = export.WriteOpenMetrics(&b, in)
	case "prometheus":
		err = export.WriteText(&b, in)
	case "jsonl":
		var skipped int
		skipped, err = export.WriteBulk(&b, in, f.index)
		if skipped > 0 {
			fmt.Fprintf(s.ErrOut, "export: left out %d values that are not finite numbers (JSON has none)\n", skipped)
		}
	}
	if err != nil {
		return err
	}
	if f.out == "" {
		_, err = s.Out.Write(b.Bytes())
		return err
	}
	return writeFile(f.out, b.Bytes())
}

func push(ctx context.Context, s streams.IOStreams, f *flags, changed func(string) bool, args []string) error {
	for _, name := range []string{"format", "out", "index"} {
		if changed(name) {
			return clierr.Usagef("--%s: not used with --push, which sends the prometheus format itself; drop one of them", name)
		}
	}
	if f.timeout <= 0 {
		return clierr.Usagef("--timeout %s: must be positive (e.g. --timeout 10s)", f.timeout)
	}
	if f.job == "" {
		return clierr.Usagef("--job: must not be empty (e.g. --job cnibench)")
	}
	if _, err := export.PushURL(f.push, f.job, f.instance); err != nil {
		return clierr.Usagef("--push %s: %v (e.g. --push http://localhost:9091)", f.push, strings.TrimPrefix(err.Error(), fmt.Sprintf("push URL %q: ", f.push)))
	}
	in, err := export.ReadFiles(args)
	if err != nil {
		return err
	}
	if err := nothingToExport(in, true); err != nil {
		return err
	}
	instance := f.instance
	if !changed("instance") {
		hosts := map[string]bool{}
		for _, i := range in {
			hosts[i.Set.Host.Hostname] = true
		}
		if len(hosts) != 1 {
			names := make([]string, 0, len(hosts))
			for h := range hosts {
				names = append(names, fmt.Sprintf("%q", h))
			}
			sort.Strings(names)
			return clierr.Usagef("--instance: the files come from hosts %s; set --instance (a group holds them all), or push each host's files separately", strings.Join(names, ", "))
		}
		for h := range hosts {
			instance = h
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o := export.PushOptions{URL: f.push, Job: f.job, Instance: instance, Timeout: f.timeout}
	if err := export.Push(ctx, o, in); err != nil {
		return err
	}
	u, _ := export.PushURL(f.push, f.job, instance)
	fmt.Fprintf(s.ErrOut, "export: pushed %s to %s\n", plural(len(args), "results file"), u)
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// writeFile replaces path with data through a temporary file in the same
// directory (a textfile collector never reads half a file).
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	_, err = io.Copy(tmp, bytes.NewReader(data))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}

// nothingToExport says so when the files hold nothing the format exports:
// no measured value at all, or (summaries: the Prometheus formats and
// --push, which export each run's statistics) no run with a summary.
func nothingToExport(in []export.Input, summaries bool) error {
	var names []string
	values, summarised := false, false
	for _, i := range in {
		names = append(names, i.Name)
		for _, r := range i.Set.Runs {
			for _, rep := range r.Repeats {
				values = values || len(rep.Metrics) > 0
			}
			for _, sm := range r.Summary {
				summarised = summarised || sm.N > 0
			}
		}
	}
	files := strings.Join(names, ", ")
	switch {
	case !values && !summarised:
		return fmt.Errorf("export: %s hold no measured value (no run, or every repeat failed): nothing to export", files)
	case summaries && !summarised:
		return fmt.Errorf("export: %s hold no summaries (the Prometheus formats export each run's median, mean and interval): nothing to export; --format csv or jsonl exports the raw repeats", files)
	}
	return nil
}
