package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// DefaultIndex is the Elasticsearch/OpenSearch index WriteBulk targets
// unless told otherwise.
const DefaultIndex = "cnibench-results"

// Doc is one measurement as a search document (k8s-netperf's convention:
// one flat document per measurement carrying its metadata, camelCase
// fields, a "uuid" shared by the documents of one results file).
type Doc struct {
	// UUID identifies the results file (host, start, tool build; the same
	// on every export of it).
	UUID string `json:"uuid"`
	// Timestamp is the repeat's start (the results' start when the repeat
	// has none), RFC 3339 UTC.
	Timestamp   string  `json:"timestamp"`
	Metric      string  `json:"metric"`
	Value       float64 `json:"value"`
	Unit        string  `json:"unit"`
	Repeat      int     `json:"repeat"`
	DurationSec float64 `json:"durationSec"`
	// Error is a failed repeat's error (its values are outside the
	// summaries).
	Error string `json:"error,omitempty"`
	// Labels are the run's labels as they are (a search engine maps them
	// as labels.<key>).
	Labels   map[string]string `json:"labels"`
	Metadata Metadata          `json:"metadata"`
}

// Metadata is the results file's provenance, repeated in every document.
type Metadata struct {
	Tool         string `json:"tool"`
	Version      string `json:"version"`
	Commit       string `json:"commit,omitempty"`
	Hostname     string `json:"hostname"`
	Kernel       string `json:"kernel,omitempty"`
	OS           string `json:"os,omitempty"`
	CPUModel     string `json:"cpuModel,omitempty"`
	Cores        int    `json:"cores,omitempty"`
	ResultsStart string `json:"resultsStart,omitempty"`
}

// CheckIndex says why name cannot be an Elasticsearch/OpenSearch index
// name, or returns nil: lowercase, at most 255 bytes, not "." or "..", not
// starting with -, _ or +, none of \ / * ? " < > | , # : or spaces.
func CheckIndex(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty")
	case name == "." || name == "..":
		return fmt.Errorf("%q is not allowed", name)
	case len(name) > 255:
		return fmt.Errorf("%d bytes, at most 255", len(name))
	case strings.ContainsAny(name[:1], "-_+"):
		return fmt.Errorf("must not start with %q", name[:1])
	case strings.ToLower(name) != name:
		return fmt.Errorf("must be lowercase")
	}
	if i := strings.IndexAny(name, "\\/*?\"<>|,#: \t\n"); i >= 0 {
		return fmt.Errorf("must not contain %q", name[i:i+1])
	}
	return nil
}

// WriteBulk writes the measurements as an Elasticsearch/OpenSearch _bulk
// body: for each, an action line {"index":{"_index":index,"_id":…}} and a
// Doc line. The _id is derived from the results file's UUID, the run, the
// repeat and the metric, so indexing the same file again replaces its
// documents instead of adding copies. Values that are not finite numbers
// (JSON has none) are left out; their count is returned.
func WriteBulk(w io.Writer, in []Input, index string) (skipped int, err error) {
	if err := CheckIndex(index); err != nil {
		return 0, fmt.Errorf("index name %q: %w", index, err)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	ids := map[*Input]string{}
	type action struct {
		Index struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		} `json:"index"`
	}
	err = measurements(in, func(m measurement) error {
		if math.IsNaN(m.value) || math.IsInf(m.value, 0) {
			skipped++
			return nil
		}
		s := m.in.Set
		id, ok := ids[m.in]
		if !ok {
			id = runID(s)
			ids[m.in] = id
		}
		ts := m.rep.Start
		if ts.IsZero() {
			ts = s.Start
		}
		var a action
		a.Index.Index = index
		a.Index.ID = fmt.Sprintf("%s-%d-%d-%s", id, m.runIdx, m.rep.Index, m.metric)
		labels := m.run.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		d := Doc{
			UUID: id, Timestamp: ts.UTC().Format(time.RFC3339Nano),
			Metric: m.metric, Value: m.value, Unit: unit(m.metric),
			Repeat: m.rep.Index, DurationSec: finite(m.rep.DurationSec), Error: m.rep.Error,
			Labels: labels,
			Metadata: Metadata{
				Tool: s.Tool.Name, Version: s.Tool.Version, Commit: s.Tool.Commit,
				Hostname: s.Host.Hostname, Kernel: s.Host.Kernel, OS: s.Host.OS,
				CPUModel: s.Host.CPUModel, Cores: s.Host.Cores, ResultsStart: formatTime(s.Start),
			},
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
		return enc.Encode(d)
	})
	if err != nil {
		return skipped, fmt.Errorf("jsonl: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return skipped, fmt.Errorf("jsonl: %w", err)
	}
	return skipped, nil
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
