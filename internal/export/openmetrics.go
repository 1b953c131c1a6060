package export

import (
	"fmt"
	"io"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/cnibench/cnibench/pkg/result"
)

// MetricPrefix starts every exported metric family's name.
const MetricPrefix = "cnibench_"

// Label names the exposition formats use themselves. A run label of the same
// name is exported as "exported_<name>".
const (
	// StatLabel says which statistic of the run's repeats a sample is:
	// one of Stats.
	StatLabel = "stat"
	// HostLabel is the results document's host name.
	HostLabel = "host"
)

// Stats are the values of StatLabel, in the order they are written: the
// median of the run's successful repeats, the bounds of its 95 %
// confidence interval (the sample's range with fewer than 6 repeats, see
// docs/results.md), and the number of repeats summarised.
var Stats = []string{"median", "ci95_low", "ci95_high", "n"}

// reservedLabels are label names a run label may not take: ours, and the
// Pushgateway's grouping labels (which Prometheus keeps with honor_labels).
var reservedLabels = map[string]bool{StatLabel: true, HostLabel: true, "job": true, "instance": true}

// FamilyName is the metric family a cnibench metric is exported as:
// MetricPrefix and the sanitized metric name ("latency_us_p99.9" →
// "cnibench_latency_us_p99_9").
func FamilyName(metric string) string { return MetricPrefix + SanitizeMetricName(metric) }

// Families builds the gauge families of every run's summaries: one family
// per metric (sorted by name), one series per run and statistic, labelled
// with the run's labels (sanitized), the host and the statistic (see
// StatLabel). Metrics without a measurement (n = 0) are left out. Two runs
// whose series would be the same (the same cell of the same host in two
// files) are an error: a scrape would keep only one.
func Families(in []Input) ([]*dto.MetricFamily, error) {
	names, err := renamed(labelKeys(in), reservedLabels, SanitizeLabelName)
	if err != nil {
		return nil, err
	}
	fams := map[string]*dto.MetricFamily{}
	famMetric := map[string]string{} // family → the metric it came from
	seen := map[string]string{}      // family + labels → where
	for i := range in {
		inp := &in[i]
		for ri := range inp.Set.Runs {
			run := &inp.Set.Runs[ri]
			labels := runLabels(run, inp.Set, names)
			for _, metric := range sortedKeys(run.Summary) {
				sum := run.Summary[metric]
				if sum.N == 0 {
					continue
				}
				fname := FamilyName(metric)
				if prev, ok := famMetric[fname]; ok && prev != metric {
					return nil, fmt.Errorf("metrics %q and %q are both exported as %s", prev, metric, fname)
				}
				famMetric[fname] = metric
				key := fname + "{" + pairsKey(labels) + "}"
				where := fmt.Sprintf("%s run %d (%s)", inp.Name, ri+1, result.LabelKey(run.Labels))
				if prev, dup := seen[key]; dup {
					return nil, fmt.Errorf("%s and %s give the same series %s: export or push them separately (another --instance)", prev, where, key)
				}
				seen[key] = where
				f := fams[fname]
				if f == nil {
					f = newFamily(fname, metric)
					fams[fname] = f
				}
				vals := []float64{sum.Median, sum.CI95Low, sum.CI95High, float64(sum.N)}
				for si, stat := range Stats {
					lp := append(append([]*dto.LabelPair{}, labels...), pair(StatLabel, stat))
					sortPairs(lp)
					f.Metric = append(f.Metric, &dto.Metric{Label: lp, Gauge: &dto.Gauge{Value: ptr(vals[si])}})
				}
			}
		}
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, n := range sortedKeys(fams) {
		out = append(out, fams[n])
	}
	return out, nil
}

func newFamily(name, metric string) *dto.MetricFamily {
	info := result.Info(metric)
	help := "cnibench " + metric
	if info.Help != "" && info.Help != metric {
		help += ": " + info.Help
	}
	if info.Unit != "" {
		help += " [" + info.Unit + "]"
	}
	help += ". stat: median, ci95_low/ci95_high (95 % interval of the median), n (repeats)"
	f := &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_GAUGE.Enum()}
	// OpenMetrics wants a unit to be the name's suffix: only the base
	// units cnibench's names already end in are declared.
	for _, u := range []string{"seconds", "bytes"} {
		if strings.HasSuffix(name, "_"+u) {
			f.Unit = ptr(u)
		}
	}
	return f
}

// runLabels are the series labels of a run: its labels under their
// exported names (empty values left out: Prometheus treats them as absent)
// and the host.
func runLabels(run *result.Run, s *result.Set, names map[string]string) []*dto.LabelPair {
	var lp []*dto.LabelPair
	for _, k := range sortedKeys(run.Labels) {
		if v := run.Labels[k]; v != "" {
			lp = append(lp, pair(names[k], v))
		}
	}
	if s.Host.Hostname != "" {
		lp = append(lp, pair(HostLabel, s.Host.Hostname))
	}
	sortPairs(lp)
	return lp
}

// pair is a label; a value that is not UTF-8 (which the formats require)
// has its bad bytes replaced by U+FFFD.
func pair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: ptr(name), Value: ptr(strings.ToValidUTF8(value, "\uFFFD"))}
}

func sortPairs(lp []*dto.LabelPair) {
	sort.Slice(lp, func(i, j int) bool { return lp[i].GetName() < lp[j].GetName() })
}

func pairsKey(lp []*dto.LabelPair) string {
	var b strings.Builder
	for i, p := range lp {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", p.GetName(), p.GetValue())
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// WriteOpenMetrics writes Families as OpenMetrics 1.0 text (# HELP, # TYPE
// gauge, # UNIT for _seconds and _bytes families, the closing # EOF). No
// timestamps: the Pushgateway and node_exporter's textfile collector refuse
// them, and Prometheus stamps samples when it scrapes.
func WriteOpenMetrics(w io.Writer, in []Input) error {
	fams, err := Families(in)
	if err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToOpenMetrics(w, f); err != nil {
			return fmt.Errorf("openmetrics: %w", err)
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(w); err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}
	return nil
}

// TextContentType is the Content-Type of WriteText's output.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText writes Families in the Prometheus text format 0.0.4 (no
// # UNIT, no # EOF): what a Pushgateway accepts (1.5 parses this format or
// protobuf, not OpenMetrics) and what node_exporter's textfile collector
// reads.
func WriteText(w io.Writer, in []Input) error {
	fams, err := Families(in)
	if err != nil {
		return fmt.Errorf("prometheus text: %w", err)
	}
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return fmt.Errorf("prometheus text: %w", err)
		}
	}
	return nil
}
