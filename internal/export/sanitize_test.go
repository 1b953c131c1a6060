package export

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, metric, label string }{
		{"trans_per_sec", "trans_per_sec", "trans_per_sec"},
		{"latency_us_p99.9", "latency_us_p99_9", "latency_us_p99_9"},
		{"a:b", "a:b", "a_b"},
		{"2nd-label", "_2nd_label", "_2nd_label"},
		{"__name__", "__name__", "label__name__"},
		{"__x", "__x", "label__x"},
		{"", "_", "_"},
		{"µs", "__s", "label__s"}, // µ is two bytes
		{"node.zone", "node_zone", "node_zone"},
		{"Mixed Case/x", "Mixed_Case_x", "Mixed_Case_x"},
	} {
		if got := SanitizeMetricName(tc.in); got != tc.metric {
			t.Errorf("SanitizeMetricName(%q) = %q, want %q", tc.in, got, tc.metric)
		}
		if got := SanitizeLabelName(tc.in); got != tc.label {
			t.Errorf("SanitizeLabelName(%q) = %q, want %q", tc.in, got, tc.label)
		}
	}
}

func TestRenamedReservedAndClashes(t *testing.T) {
	names, err := renamed([]string{"stat", "job", "datapath", "exported_stat"}, reservedLabels, SanitizeLabelName)
	if err == nil {
		t.Fatalf("stat and exported_stat both became %v: want an error", names)
	}
	names, err = renamed([]string{"stat", "instance", "host", "datapath"}, reservedLabels, SanitizeLabelName)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"stat": "exported_stat", "instance": "exported_instance", "host": "exported_host", "datapath": "datapath"}
	for k, v := range want {
		if names[k] != v {
			t.Errorf("%s → %q, want %q", k, names[k], v)
		}
	}
	if _, err := renamed([]string{"a.b", "a-b"}, nil, SanitizeLabelName); err == nil || !strings.Contains(err.Error(), `"a.b" and "a-b"`) {
		t.Errorf("a.b and a-b: err = %v, want both named", err)
	}
}

func TestCheckIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"cnibench-results", true}, {"perf.cni_2026", true},
		{"", false}, {".", false}, {"Upper", false}, {"-x", false}, {"_x", false},
		{"a b", false}, {"a/b", false}, {"a:b", false}, {"a*", false}, {strings.Repeat("a", 256), false},
	} {
		if err := CheckIndex(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckIndex(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// FuzzExposition: whatever the metric name, label names and values, the
// text output parses back with the library's parser (legacy names) and
// keeps the label value exactly.
func FuzzExposition(f *testing.F) {
	f.Add("latency_us_p99.9", "node.zone", "rack \"b\"\\2\nrow 3")
	f.Add("", "", "")
	f.Add("9x", "__name__", "µ")
	f.Add("a{b}", "stat", "\x00\xff")
	f.Fuzz(func(t *testing.T, metric, label, value string) {
		if !model.LegacyValidation.IsValidLabelName(SanitizeLabelName(label)) || !model.LegacyValidation.IsValidMetricName(SanitizeMetricName(metric)) {
			t.Fatalf("invalid names from %q, %q", metric, label)
		}
		s := &result.Set{Schema: result.SchemaResults, Runs: []result.Run{{
			Labels:  map[string]string{label: value},
			Summary: map[string]stats.Summary{metric: {N: 1, Median: 1, CI95Low: 1, CI95High: 1}},
		}}}
		var b bytes.Buffer
		if err := WriteText(&b, []Input{{Name: "f.json", Set: s}}); err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := p.TextToMetricFamilies(&b)
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, b.String())
		}
		fam := fams[FamilyName(metric)]
		if fam == nil || len(fam.GetMetric()) != len(Stats) {
			t.Fatalf("family %s: %v", FamilyName(metric), fam)
		}
		if value == "" || !utf8.ValidString(value) {
			return // empty values are left out; invalid UTF-8 is not kept byte for byte
		}
		for _, lp := range fam.GetMetric()[0].GetLabel() {
			if lp.GetName() != StatLabel && lp.GetValue() != value {
				t.Errorf("label %s = %q, want %q", lp.GetName(), lp.GetValue(), value)
			}
		}
	})
}
