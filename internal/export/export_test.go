package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cnibench/cnibench/pkg/result"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const fixture = "testdata/results.json"

func readFixture(t *testing.T) []Input {
	t.Helper()
	in, err := ReadFiles([]string{fixture})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		_ = os.WriteFile(filepath.Join("testdata", name+".got"), []byte(got), 0o644)
		t.Errorf("output differs from %s; wrote testdata/%s.got (diff them, or run go test -update if the change is intended)", path, name)
	}
}

func TestGolden(t *testing.T) {
	in := readFixture(t)
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"results.csv", func(b *bytes.Buffer) error { return WriteCSV(b, in) }},
		{"results.om.txt", func(b *bytes.Buffer) error { return WriteOpenMetrics(b, in) }},
		{"results.prom.txt", func(b *bytes.Buffer) error { return WriteText(b, in) }},
		{"results.jsonl", func(b *bytes.Buffer) error {
			skipped, err := WriteBulk(b, in, DefaultIndex)
			if skipped != 0 {
				t.Errorf("skipped %d values, want 0", skipped)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.String())
		})
	}
}

// count is the number of measurements in the inputs.
func count(in []Input) int {
	n := 0
	for _, inp := range in {
		for _, r := range inp.Set.Runs {
			for _, rep := range r.Repeats {
				n += len(rep.Metrics)
			}
		}
	}
	return n
}

// TestCSVReadsBack parses the CSV and finds every measurement of the
// fixture, exactly, under its labels.
func TestCSVReadsBack(t *testing.T) {
	in := readFixture(t)
	var b bytes.Buffer
	if err := WriteCSV(&b, in); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows)-1, count(in); got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, k := range []string{"datapath", "node.zone", "2nd-label", "metric", "value", "repeat"} {
		if _, ok := col[k]; !ok {
			t.Fatalf("no column %q in %v", k, rows[0])
		}
	}
	found := 0
	for _, row := range rows[1:] {
		for _, r := range in[0].Set.Runs {
			if r.Labels["datapath"] != row[col["datapath"]] || r.Labels["node.zone"] != row[col["node.zone"]] {
				continue
			}
			idx, _ := strconv.Atoi(row[col["repeat"]])
			want := r.Repeats[idx].Metrics[row[col["metric"]]]
			got, err := strconv.ParseFloat(row[col["value"]], 64)
			if err != nil || got != want {
				t.Errorf("row %v: value %q, want %v", row, row[col["value"]], want)
			}
			found++
		}
	}
	if found != len(rows)-1 {
		t.Errorf("%d of %d rows matched a run", found, len(rows)-1)
	}
}

// TestTextParsesBack parses the Prometheus text with the library's parser
// and checks every run's median, bounds and n.
func TestTextParsesBack(t *testing.T) {
	in := readFixture(t)
	var b bytes.Buffer
	if err := WriteText(&b, in); err != nil {
		t.Fatal(err)
	}
	checkParsed(t, in, b.String())
	// OpenMetrics differs by # UNIT and # EOF, which the text parser
	// reads as comments: the same samples.
	b.Reset()
	if err := WriteOpenMetrics(&b, in); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "# EOF\n") {
		t.Errorf("OpenMetrics output does not end with # EOF")
	}
	if !strings.Contains(b.String(), "# UNIT cnibench_client_max_rss_bytes bytes\n") {
		t.Errorf("no # UNIT line for the _bytes family")
	}
	checkParsed(t, in, b.String())
}

func checkParsed(t *testing.T, in []Input, text string) {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	checked := 0
	for _, r := range in[0].Set.Runs {
		for metric, sum := range r.Summary {
			f := fams[FamilyName(metric)]
			if f == nil {
				t.Errorf("no family for %s", metric)
				continue
			}
			if f.GetType() != dto.MetricType_GAUGE {
				t.Errorf("%s: type %v, want gauge", f.GetName(), f.GetType())
			}
			want := map[string]float64{"median": sum.Median, "ci95_low": sum.CI95Low, "ci95_high": sum.CI95High, "n": float64(sum.N)}
			for _, m := range f.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if l["datapath"] != r.Labels["datapath"] || l["node_zone"] != r.Labels["node.zone"] || l["host"] != "lab-host" {
					continue
				}
				if got := m.GetGauge().GetValue(); got != want[l["stat"]] {
					t.Errorf("%s %v: %v, want %v", f.GetName(), l, got, want[l["stat"]])
				}
				delete(want, l["stat"])
				checked++
			}
			if len(want) != 0 {
				t.Errorf("%s of %s: stats not found: %v", metric, r.Labels["datapath"], want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("checked nothing")
	}
}

func TestBulkDecodes(t *testing.T) {
	in := readFixture(t)
	var b bytes.Buffer
	if _, err := WriteBulk(&b, in, "perf-x"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if got, want := len(lines), 2*count(in); got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
	ids := map[string]bool{}
	for i := 0; i < len(lines); i += 2 {
		var a struct {
			Index struct {
				Index string `json:"_index"`
				ID    string `json:"_id"`
			} `json:"index"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &a); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if a.Index.Index != "perf-x" || a.Index.ID == "" || ids[a.Index.ID] {
			t.Errorf("line %d: action %s: want _index perf-x and a unique _id", i+1, lines[i])
		}
		ids[a.Index.ID] = true
		var d Doc
		dec := json.NewDecoder(strings.NewReader(lines[i+1]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("line %d: %v", i+2, err)
		}
		if d.Metadata.Hostname != "lab-host" || d.UUID == "" || d.Timestamp == "" {
			t.Errorf("line %d: incomplete document %s", i+2, lines[i+1])
		}
	}
}

func TestBulkSkipsNonFinite(t *testing.T) {
	s := &result.Set{Schema: result.SchemaResults, Runs: []result.Run{{
		Labels:  map[string]string{"test": "x"},
		Repeats: []result.Repeat{{Metrics: map[string]float64{"a": math.NaN(), "b": math.Inf(1), "c": 1}}},
	}}}
	var b bytes.Buffer
	skipped, err := WriteBulk(&b, []Input{{Name: "x.json", Set: s}}, DefaultIndex)
	if err != nil || skipped != 2 || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("skipped %d, err %v, output %q: want 2 skipped and one document", skipped, err, b.String())
	}
}

func TestDuplicateSeries(t *testing.T) {
	in := readFixture(t)
	again := readFixture(t)
	again[0].Name = "copy.json"
	err := WriteText(&bytes.Buffer{}, append(in, again...))
	if err == nil || !strings.Contains(err.Error(), "copy.json") || !strings.Contains(err.Error(), "same series") {
		t.Errorf("err = %v, want the same series named with both files", err)
	}
	// Another host makes other series.
	again[0].Set.Host.Hostname = "other-host"
	if err := WriteText(&bytes.Buffer{}, append(in, again...)); err != nil {
		t.Errorf("two hosts: %v", err)
	}
}

// TestSingleRun exports a cnibench/result/v1 document (one run, its labels
// from the config).
func TestSingleRun(t *testing.T) {
	doc := `{"schema":"cnibench/result/v1","tool":{"name":"cnibench","version":"v1"},"start":"2026-01-02T03:04:05Z",
"host":{"hostname":"h"},"config":{"test":"tcp_stream","flows":"2","target":"10.0.0.2:7000"},
"repeats":[{"index":0,"start":"2026-01-02T03:04:06Z","duration_sec":1,"metrics":{"throughput_bits_per_sec":9e9}}],
"summary":{"throughput_bits_per_sec":{"n":1,"median":9e9,"ci95_low":9e9,"ci95_high":9e9}}}`
	s, err := result.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	in := []Input{{Name: "run.json", Set: s}}
	var b bytes.Buffer
	if err := WriteText(&b, in); err != nil {
		t.Fatal(err)
	}
	want := `cnibench_throughput_bits_per_sec{flows="2",host="h",stat="median",target="10.0.0.2:7000",test="tcp_stream"} 9e+09`
	if !strings.Contains(b.String(), want+"\n") {
		t.Errorf("output lacks %s:\n%s", want, b.String())
	}
	b.Reset()
	if err := WriteCSV(&b, in); err != nil {
		t.Fatal(err)
	}
	if want := "2026-01-02T03:04:05Z,v1,,h,2,10.0.0.2:7000,tcp_stream,0,2026-01-02T03:04:06Z,1,throughput_bits_per_sec,bit/s,9e+09,\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("csv:\n%s\nwant its last row %s", b.String(), want)
	}
}
