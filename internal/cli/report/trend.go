package reportcmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/report/trend"
	"github.com/cnibench/cnibench/pkg/result"
)

// trendFlags are report's --trend flags.
type trendFlags struct {
	trend      bool
	metrics    []string
	match      []string
	out        string
	alpha      float64
	minShift   string
	sortBy     string
	pointLabel string
}

func (t *trendFlags) add(c *cobra.Command) {
	fl := c.Flags()
	fl.BoolVar(&t.trend, "trend", false, "follow metrics across a series of runs (RUN… in series order, at least 3) and flag change points")
	fl.StringSliceVar(&t.metrics, "metrics", nil, "with --trend, the metrics to follow, comma-separated (default: each test's default metrics, as compare)")
	fl.StringSliceVar(&t.match, "match", nil, "with --trend, match runs across the points on these labels only, comma-separated (e.g. datapath,path,test,flows to ignore a version label)")
	fl.StringVar(&t.out, "out", "", "with --trend, write trend.html and trend.md into this directory")
	fl.Float64Var(&t.alpha, "alpha", trend.DefaultAlpha, "with --trend, the significance level of the change-point permutation test")
	fl.StringVar(&t.minShift, "min-shift", "2%", "with --trend, the smallest change of the median flagged, in percent")
	fl.StringVar(&t.sortBy, "sort", "args", "with --trend, the order of the points: args (as given) or time (the documents' start times)")
	fl.StringVar(&t.pointLabel, "point-label", "", "with --trend, name each point by this key of its document (a config key, a label every run shares, or version/commit of the tool) instead of its directory")
}

// unused refuses --trend's flags without --trend.
func (t *trendFlags) unused(c *cobra.Command) error {
	for _, name := range []string{"metrics", "match", "out", "alpha", "min-shift", "sort", "point-label"} {
		if c.Flags().Changed(name) {
			return clierr.Usagef("--%s: only used with --trend; add --trend or drop --%s", name, name)
		}
	}
	return nil
}

func splitList(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// parseShift reads "2", "2%" or "2 %" as 0.02.
func parseShift(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || v < 0 || v >= 100 {
		return 0, clierr.Usagef("--min-shift %s: must be a percentage from 0 to 100, e.g. 2%%", s)
	}
	return v / 100, nil
}

func runTrend(s streams.IOStreams, f *flags, args []string) error {
	if f.output != "" {
		return clierr.Usagef("-o: --trend writes two files; use --out DIR instead")
	}
	format := f.format
	switch format {
	case "":
		format = "md"
	case "md", "html":
	default:
		return clierr.Usagef("--format %s: --trend writes md or html", f.format)
	}
	if len(args) < trend.MinPoints {
		return clierr.Usagef("--trend needs at least %d runs (results.json files or their directories) in series order, got %d; add RUN arguments", trend.MinPoints, len(args))
	}
	if f.sortBy != "args" && f.sortBy != "time" {
		return clierr.Usagef("--sort %s: must be args or time", f.sortBy)
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return clierr.Usagef("--alpha %v: must be between 0 and 1, e.g. 0.05", f.alpha)
	}
	minShift, err := parseShift(f.minShift)
	if err != nil {
		return err
	}
	if minShift == 0 {
		minShift = -1 // trend.Options: negative is no minimum, 0 the default
	}
	var points []trend.Point
	for _, arg := range args {
		path := arg
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			path = filepath.Join(arg, "results.json")
		}
		set, err := result.ReadFile(path)
		if err != nil {
			return err
		}
		name, err := pointName(path, set, f.pointLabel)
		if err != nil {
			return err
		}
		points = append(points, trend.Point{Name: name, Set: set})
	}
	if f.sortBy == "time" {
		sort.SliceStable(points, func(i, j int) bool { return points[i].Set.Start.Before(points[j].Set.Start) })
	}
	tr, err := trend.Analyze(points, trend.Options{Metrics: splitList(f.metrics), Match: splitList(f.match), Alpha: f.alpha, MinShift: minShift})
	var ue *trend.UsageError
	if errors.As(err, &ue) {
		return clierr.Usagef("%s", ue.Msg)
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		htmlPath, mdPath, err := tr.WriteFiles(f.out)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.ErrOut, "wrote %s and %s: %d flagged change points (%d regressions)\n", htmlPath, mdPath, len(tr.Changes()), tr.Regressions())
		return nil
	}
	if format == "html" {
		return tr.HTML(s.Out)
	}
	return tr.Markdown(s.Out)
}

// pointName is the point's name: with key, the document's value of it;
// otherwise the results file's directory.
func pointName(path string, set *result.Set, key string) (string, error) {
	if key == "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		return filepath.Base(filepath.Dir(abs)), nil
	}
	if v, ok := set.Config[key]; ok && v != "" {
		return v, nil
	}
	shared := ""
	for i, r := range set.Runs {
		v := r.Labels[key]
		if v == "" || (i > 0 && v != shared) {
			shared = ""
			break
		}
		shared = v
	}
	if shared != "" {
		return shared, nil
	}
	switch key {
	case "version":
		if set.Tool.Version != "" {
			return set.Tool.Version, nil
		}
	case "commit":
		if set.Tool.Commit != "" {
			return set.Tool.Commit, nil
		}
	}
	return "", clierr.Usagef("--point-label %s: %s has no config key %s, no label %s shared by all its runs, and it is not version or commit; choose another key or drop --point-label", key, path, key, key)
}
