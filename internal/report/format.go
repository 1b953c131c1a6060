package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

// Scale is a display unit for a metric: values are divided by Div and
// printed with Unit.
type Scale struct {
	Div  float64
	Unit string
}

// ScaleFor picks the display unit for a metric whose values are around
// mag (usually the largest value to show): Gbit/s for throughput above
// 1 Gbit/s, k trans/s above 1000 trans/s, ms above 10000 µs, …
func ScaleFor(metric string, mag float64) Scale {
	unit := result.Info(metric).Unit
	a := math.Abs(mag)
	if math.IsNaN(a) || math.IsInf(a, 0) {
		a = 0
	}
	switch unit {
	case "bit/s":
		switch {
		case a >= 1e9:
			return Scale{1e9, "Gbit/s"}
		case a >= 1e6:
			return Scale{1e6, "Mbit/s"}
		case a >= 1e3:
			return Scale{1e3, "kbit/s"}
		}
		return Scale{1, "bit/s"}
	case "µs":
		if a >= 10000 {
			return Scale{1000, "ms"}
		}
		return Scale{1, "µs"}
	case "bytes":
		switch {
		case a >= 1<<30:
			return Scale{1 << 30, "GiB"}
		case a >= 1<<20:
			return Scale{1 << 20, "MiB"}
		case a >= 1<<10:
			return Scale{1 << 10, "KiB"}
		}
		return Scale{1, "B"}
	case "s":
		switch {
		case a >= 1 || a == 0:
			return Scale{1, "s"}
		case a >= 1e-3:
			return Scale{1e-3, "ms"}
		}
		return Scale{1e-6, "µs"}
	case "% of a core":
		return Scale{1, "%"}
	case "%":
		return Scale{1, "%"}
	case "":
		return Scale{1, ""}
	}
	// trans/s, datagrams, segments, errors, /s: SI prefixes.
	switch {
	case a >= 1e9:
		return Scale{1e9, "G " + unit}
	case a >= 1e6:
		return Scale{1e6, "M " + unit}
	case a >= 1e4:
		return Scale{1e3, "k " + unit}
	}
	return Scale{1, unit}
}

// AxisUnit is the unit text for a chart axis or table header.
// axisLabel is a chart's y-axis label: the metric's title with its unit in
// parentheses, unless the title's closing parenthesis already names it
// ("Proxies' CPU (% of a core)"), which would name the unit twice; a
// closing remark that is not the unit ("Client CPU (curl, scp + ssh)")
// still gets it.
func axisLabel(title, metric string, sc Scale) string {
	unit := AxisUnit(metric, sc)
	if i := strings.LastIndex(title, "("); i >= 0 && strings.HasSuffix(title, ")") && unit != "" && strings.Contains(title[i:], unit) {
		return title
	}
	return title + " (" + unit + ")"
}

func AxisUnit(metric string, sc Scale) string {
	if result.Info(metric).Unit == "% of a core" {
		return "% of one core"
	}
	return sc.Unit
}

// Num formats a scaled number with three significant digits (no
// exponent); NaN and infinities become "—".
func Num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		s = fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	case a >= 1:
		s = fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		s = fmt.Sprintf("%.3f", v)
	default:
		s = fmt.Sprintf("%.2g", v)
		if strings.ContainsAny(s, "e") {
			s = fmt.Sprintf("%.6f", v)
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// countUnits are the units of metrics that count things, each with its
// singular: a whole number of them prints without decimals ("3 objects",
// not "3.00 objects"; "1 object"); a median between two counts keeps its
// fraction ("2.50 objects").
var countUnits = map[string]string{
	"count": "count", "objects": "object", "services": "service", "entries": "entry", "packets": "packet",
	"frames": "frame", "segments": "segment", "connects": "connect", "probes": "probe", "backends": "backend",
	"translations": "translation", "SYNs": "SYN",
}

// Value formats one value of a metric with its unit, e.g. "38.2 Gbit/s",
// "52.3 k trans/s", "48.1 µs", "245 %", "21 objects".
func Value(metric string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	sc := ScaleFor(metric, v)
	if one, ok := countUnits[result.Info(metric).Unit]; ok && sc.Div == 1 && v == math.Trunc(v) {
		if v == 1 {
			return withUnit("1", one)
		}
		return withUnit(fmt.Sprintf("%.0f", v), sc.Unit)
	}
	return withUnit(Num(v/sc.Div), sc.Unit)
}

func withUnit(n, unit string) string {
	if unit == "" || n == "—" {
		return n
	}
	return n + " " + unit
}

// Median formats a summary's median with its unit and the half-width of
// its confidence interval in percent: "38.2 Gbit/s ± 1%"; an interval
// wider than the value itself is shown by its bounds instead, "41 µs
// [12 µs, 1.3 ms]" (not "± 3094%"). An empty summary gives "—".
func Median(metric string, s stats.Summary) string {
	if s.N == 0 {
		return "—"
	}
	if p := s.CIHalfPct(); p >= 100 && !math.IsInf(p, 0) {
		return Value(metric, s.Median) + " [" + Value(metric, s.CI95Low) + ", " + Value(metric, s.CI95High) + "]"
	}
	return Value(metric, s.Median) + " " + PlusMinus(s)
}

// PlusMinus renders the CI half-width like benchstat: "± 1%", "± 0.4%".
func PlusMinus(s stats.Summary) string {
	p := s.CIHalfPct()
	switch {
	case math.IsNaN(p) || math.IsInf(p, 0):
		return "± ?"
	case p >= 10 || p == 0:
		return fmt.Sprintf("± %.0f%%", p)
	case p >= 1:
		return fmt.Sprintf("± %.0f%%", p)
	}
	return fmt.Sprintf("± %.1f%%", p)
}

// Pct formats a percentage with a sign: "+3.4%", "-12%".
func Pct(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "—"
	}
	a := math.Abs(p)
	switch {
	case a >= 99.5:
		return fmt.Sprintf("%+.0f%%", p)
	case a >= 0.05:
		return fmt.Sprintf("%+.1f%%", p)
	}
	return "0.0%"
}

// PValue formats a p-value with three decimals ("p=0.008").
func PValue(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "p=?"
	}
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.3f", p)
}

// BetterText says which direction of a metric is better.
func BetterText(metric string) string {
	switch result.Info(metric).Better {
	case result.HigherIsBetter:
		return "higher is better"
	case result.LowerIsBetter:
		return "lower is better"
	}
	return "neither direction is better"
}

// MetricTitle is a short human title for a metric.
func MetricTitle(metric string) string {
	switch metric {
	case result.ThroughputBitsPerSec:
		return "Throughput"
	case result.ThroughputRxBitsPerSec:
		return "Received throughput"
	case result.TransPerSec:
		return "Transaction rate"
	case result.CPUPctPer100Gbit:
		return "CPU % needed for 100 Gbit/s"
	case result.CPUUsPerTrans:
		return "CPU µs per transaction"
	case result.LatencyUsP50:
		return "Latency p50"
	case result.LatencyUsP90:
		return "Latency p90"
	case result.LatencyUsP99:
		return "Latency p99"
	case result.LatencyUsP999:
		return "Latency p99.9"
	case result.LossPct:
		return "UDP loss"
	case result.HostCPUPct:
		return "Host CPU"
	case result.TCPRetransmits:
		return "TCP retransmits"
	}
	return metric
}
