// Package export turns cnibench results (cnibench/results/v1 or a single
// cnibench/result/v1) into formats other tools ingest: CSV with one row per
// measurement, the Prometheus text and OpenMetrics exposition formats (one
// gauge family per metric, one series per run and statistic) and
// Elasticsearch/OpenSearch _bulk JSON lines with one document per
// measurement. It also pushes the Prometheus text to a Pushgateway. See
// docs/export.md.
package export

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// Input is one results document and the name it is known by (its path),
// which error messages use.
type Input struct {
	Name string
	Set  *result.Set
}

// ReadFiles reads every path with result.ReadFile, in order.
func ReadFiles(paths []string) ([]Input, error) {
	in := make([]Input, 0, len(paths))
	for _, p := range paths {
		s, err := result.ReadFile(p)
		if err != nil {
			return nil, err
		}
		in = append(in, Input{Name: p, Set: s})
	}
	return in, nil
}

// measurement is one value: a run's repeat's metric.
type measurement struct {
	in     *Input
	runIdx int
	run    *result.Run
	rep    *result.Repeat
	metric string
	value  float64
}

// measurements calls fn for every measurement in a fixed order: inputs as
// given, runs in file order, repeats in file order, metrics by name.
func measurements(in []Input, fn func(m measurement) error) error {
	for i := range in {
		inp := &in[i]
		for ri := range inp.Set.Runs {
			run := &inp.Set.Runs[ri]
			for pi := range run.Repeats {
				rep := &run.Repeats[pi]
				for _, name := range sortedKeys(rep.Metrics) {
					m := measurement{in: inp, runIdx: ri, run: run, rep: rep, metric: name, value: rep.Metrics[name]}
					if err := fn(m); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// labelKeys is the sorted union of the runs' label keys over all inputs.
func labelKeys(in []Input) []string {
	seen := map[string]bool{}
	for _, inp := range in {
		for _, r := range inp.Set.Runs {
			for k := range r.Labels {
				seen[k] = true
			}
		}
	}
	return sortedKeys(seen)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runID identifies a results document across exports: derived from its
// host name, start time and tool build, so exporting the same file twice
// gives the same id (and the same _bulk document ids). Formatted like a
// UUID (k8s-netperf's documents carry a "uuid").
func runID(s *result.Set) string {
	h := sha256.Sum256([]byte(s.Host.Hostname + "\x00" + s.Start.UTC().Format(time.RFC3339Nano) + "\x00" + s.Tool.Version + "\x00" + s.Tool.Commit))
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// unit is the metric's unit as result.Info documents it.
func unit(metric string) string { return result.Info(metric).Unit }

// SanitizeMetricName makes s a valid Prometheus metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*): every other byte becomes '_', and a leading
// digit gets a '_' in front. The empty string becomes "_".
func SanitizeMetricName(s string) string {
	return sanitize(s, true)
}

// SanitizeLabelName makes s a valid Prometheus label name
// ([a-zA-Z_][a-zA-Z0-9_]*) that is not reserved: every other byte becomes
// '_', a leading digit gets a '_' in front, and a name starting with "__"
// (reserved for Prometheus' internal labels) gets "label" in front.
func SanitizeLabelName(s string) string {
	n := sanitize(s, false)
	if strings.HasPrefix(n, "__") {
		n = "label" + n
	}
	return n
}

func sanitize(s string, colon bool) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (colon && c == ':')
		if i == 0 && c >= '0' && c <= '9' {
			b.WriteByte('_')
		}
		if ok {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// renamed maps run label keys to the names used as columns or Prometheus
// labels: sanitized by clean (or kept), and prefixed with "exported_" when
// they collide with a name the format uses itself (Prometheus' own
// convention for clashing target labels). Two keys that end up the same
// are an error naming both.
func renamed(keys []string, reserved map[string]bool, clean func(string) string) (map[string]string, error) {
	out := make(map[string]string, len(keys))
	from := map[string]string{}
	for _, k := range keys {
		n := clean(k)
		for reserved[n] {
			n = "exported_" + n
		}
		if prev, dup := from[n]; dup {
			return nil, fmt.Errorf("labels %q and %q both become %q; rename one of them in the results", prev, k, n)
		}
		from[n] = k
		out[k] = n
	}
	return out, nil
}

func identity(s string) string { return s }
