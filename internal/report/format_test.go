package report

import (
	"math"
	"testing"

	"github.com/cnibench/cnibench/pkg/result"
)

func init() {
	result.RegisterMetrics("report format test", map[string]result.MetricInfo{
		"fmt_test_objects": {Unit: "objects", Better: result.Neutral, Help: "a count, for TestValue"},
	})
}

// TestValue: a metric's value with its display unit; whole counts print
// without decimals.
func TestValue(t *testing.T) {
	for _, c := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"fmt_test_objects", 3, "3 objects"},
		{"fmt_test_objects", 21, "21 objects"},
		{"fmt_test_objects", 1, "1 object"},
		{"fmt_test_objects", 2.5, "2.50 objects"},
		{"fmt_test_objects", 0, "0 objects"},
		{"fmt_test_objects", 64000, "64.0 k objects"},
		{"rr_p50_us", 48, "48.0 µs"},
		{"rr_p50_us", 48.1, "48.1 µs"},
		{"fmt_test_objects", math.NaN(), "—"},
	} {
		if got := Value(c.metric, c.v); got != c.want {
			t.Errorf("Value(%s, %v) = %q, want %q", c.metric, c.v, got, c.want)
		}
	}
}
