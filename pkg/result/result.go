// Package result defines cnibench's versioned JSON formats: a single
// measurement (schema cnibench/result/v1, written by `cnibench run`) and a
// set of labelled runs (schema cnibench/results/v1, written by the suite and
// read by `cnibench report` and `cnibench compare`). See docs/results.md.
package result

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cnibench/cnibench/pkg/stats"
)

// Schema identifiers. A reader rejects documents whose schema it does not know.
const (
	SchemaResult  = "cnibench/result/v1"
	SchemaResults = "cnibench/results/v1"
)

// ErrSchema is returned when a document has an unknown or missing schema id.
var ErrSchema = errors.New("unknown schema")

// Tool identifies the cnibench build that produced a document.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go,omitempty"`
}

// Host describes the machine a measurement ran on.
type Host struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	OS       string `json:"os,omitempty"`
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
	MemBytes uint64 `json:"mem_bytes,omitempty"`
	// AESNI says whether the CPU has AES instructions (the "aes" flag).
	AESNI bool `json:"aes_ni,omitempty"`
	// KernelCrypto maps the algorithms the encryption scenario cares about
	// (gcm(aes), rfc4106(gcm(aes)), cbc(aes), hmac(sha256),
	// rfc7539esp(chacha20,poly1305)) to the kernel's preferred driver
	// (highest priority in /proc/crypto), or "absent".
	KernelCrypto map[string]string `json:"kernel_crypto,omitempty"`
}

// Repeat is one measured window: raw metrics keyed by metric name (units
// are part of the name, see Metrics).
type Repeat struct {
	Index       int                `json:"index"`
	Start       time.Time          `json:"start"`
	DurationSec float64            `json:"duration_sec"`
	Metrics     map[string]float64 `json:"metrics"`
	// LatencyHist is the repeat's full latency histogram (nanoseconds) in
	// HdrHistogram's V2 compressed base64 encoding, for tests with
	// transactions.
	LatencyHist string `json:"latency_hist,omitempty"`
	Error       string `json:"error,omitempty"`
	// Busy, when set, says why the repeat is not trusted: other programs
	// used more of the host than the run's interference threshold during
	// its window. It is kept, and left out of summaries and grades while
	// its cell has clean repeats (UsedRepeats; docs/interference.md).
	Busy string `json:"busy,omitempty"`
	// Rerun marks a repeat measured again at the end of the run because an
	// earlier one was busy.
	Rerun bool `json:"rerun,omitempty"`
}

// Result is one `cnibench run`: a test against one target, repeated.
type Result struct {
	Schema string    `json:"schema"`
	Tool   Tool      `json:"tool"`
	Start  time.Time `json:"start"`
	Host   Host      `json:"host"`
	// Config holds the full configuration as key/value pairs (test, flows,
	// sizes, duration, target, path_mtu, …).
	Config  map[string]string        `json:"config"`
	Repeats []Repeat                 `json:"repeats"`
	Summary map[string]stats.Summary `json:"summary"`
	// Warnings are about the measurement as a whole (a repeat failed,
	// the server was busy with other clients, busy polling was on, …).
	Warnings []string `json:"warnings,omitempty"`
	// Interrupted is true when the run was stopped (Ctrl-C) before all
	// repeats finished; Repeats holds what was measured.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Summarize recomputes r.Summary from the raw repeats (failed repeats are
// left out).
func (r *Result) Summarize() {
	r.Summary = SummarizeRepeats(r.Repeats)
}

// SummarizeRepeats summarises every metric found in the repeats that count
// (UsedRepeats: the successful ones, the busy ones left out while clean ones
// remain).
func SummarizeRepeats(reps []Repeat) map[string]stats.Summary {
	vals := map[string][]float64{}
	for _, rep := range UsedRepeats(reps) {
		for k, v := range rep.Metrics {
			vals[k] = append(vals[k], v)
		}
	}
	out := make(map[string]stats.Summary, len(vals))
	for k, v := range vals {
		out[k] = stats.Summarize(v)
	}
	return out
}

// Run is one labelled measurement inside a Set.
type Run struct {
	// Labels identify the cell of the matrix: datapath, path
	// (cross-node/same-node), test, flows, scenario, mtu, …
	Labels      map[string]string        `json:"labels"`
	Config      map[string]string        `json:"config,omitempty"`
	Repeats     []Repeat                 `json:"repeats"`
	Summary     map[string]stats.Summary `json:"summary"`
	Warnings    []string                 `json:"warnings,omitempty"`
	Interrupted bool                     `json:"interrupted,omitempty"`
	// NotTrusted, when set, is why the cell is not graded: too few of its
	// repeats were clean (Repeat.Busy), "not trusted: the host was busy
	// (median X % of a core used by other programs)".
	NotTrusted string `json:"not_trusted,omitempty"`
	// Profile summarises the cell's CPU profile (suite --cpu-profile).
	Profile *Profile `json:"profile,omitempty"`
}

// Skip records a cell (or a whole datapath) that was not measured, and why.
type Skip struct {
	Labels map[string]string `json:"labels"`
	Reason string            `json:"reason"`
}

// Datapath describes a datapath that took part in a Set.
type Datapath struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	PacketPath  string `json:"packet_path,omitempty"`
	Skipped     string `json:"skipped,omitempty"`
}

// Set is a collection of labelled runs: the suite's results.json.
type Set struct {
	Schema      string            `json:"schema"`
	Tool        Tool              `json:"tool"`
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end,omitempty"`
	Host        Host              `json:"host"`
	Config      map[string]string `json:"config,omitempty"`
	Datapaths   []Datapath        `json:"datapaths,omitempty"`
	Runs        []Run             `json:"runs"`
	Skipped     []Skip            `json:"skipped,omitempty"`
	Warnings    []string          `json:"warnings,omitempty"`
	Interrupted bool              `json:"interrupted,omitempty"`
	// Findings are the verdicts of a backend's checks (a cluster's MTU,
	// NetworkPolicy, encryption, CNI and its footprint), each with its
	// evidence.
	Findings []Finding `json:"findings,omitempty"`
	// Shape, when set, says how to draw the scenario's runs (written by
	// the suite from the scenario; absent in documents from before it
	// existed and for the matrix).
	Shape *ScenarioShape `json:"shape,omitempty"`
	// Interference is how busy the host was with other programs, before
	// and during the run (absent in documents from before it was measured).
	Interference *Interference `json:"interference,omitempty"`
}

// Finding is one check's verdict with the evidence behind it.
type Finding struct {
	// Check names the check: mtu, network_policy, encryption, cni,
	// cni_footprint.
	Check string `json:"check"`
	// Verdict is the check's outcome in a word or two: correct,
	// misconfigured, enforced, not-enforced, partial, encrypted, clear,
	// identified, measured, skipped, failed, …
	Verdict string `json:"verdict"`
	// Summary says the verdict in one sentence.
	Summary string `json:"summary"`
	// Evidence lists what was observed, one fact per line.
	Evidence []string `json:"evidence,omitempty"`
	// Metrics are the check's measured figures, with units in their
	// names (cpu_millicores_idle, throughput_cost_pct, …).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Labels place the finding (cluster, cni, node, …).
	Labels map[string]string `json:"labels,omitempty"`
}

// AddResult appends a single-run Result to the set under labels.
func (s *Set) AddResult(labels map[string]string, r *Result) {
	s.Runs = append(s.Runs, Run{
		Labels: labels, Config: r.Config, Repeats: r.Repeats, Summary: r.Summary,
		Warnings: r.Warnings, Interrupted: r.Interrupted,
	})
}

// Find returns the runs whose labels include all of match.
func (s *Set) Find(match map[string]string) []Run {
	var out []Run
	for _, r := range s.Runs {
		if hasLabels(r.Labels, match) {
			out = append(out, r)
		}
	}
	return out
}

func hasLabels(l, match map[string]string) bool {
	for k, v := range match {
		if l[k] != v {
			return false
		}
	}
	return true
}

// LabelKey renders labels as a stable "k=v,k=v" string (sorted keys).
func LabelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += k + "=" + l[k]
	}
	return s
}

// Write encodes v (a *Result or *Set) as indented JSON.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type schemaProbe struct {
	Schema string `json:"schema"`
}

// Decode reads a cnibench/result/v1 or cnibench/results/v1 document. A
// single Result is returned as a Set with one run (labels from its config),
// so readers handle one shape.
func Decode(data []byte) (*Set, error) {
	var p schemaProbe
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("not a cnibench JSON document: %w", err)
	}
	switch p.Schema {
	case SchemaResults:
		var s Set
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("decode %s: %w", p.Schema, err)
		}
		return &s, nil
	case SchemaResult:
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("decode %s: %w", p.Schema, err)
		}
		s := &Set{Schema: SchemaResults, Tool: r.Tool, Start: r.Start, Host: r.Host, Interrupted: r.Interrupted}
		labels := map[string]string{}
		for _, k := range []string{"test", "flows", "target"} {
			if v, ok := r.Config[k]; ok {
				labels[k] = v
			}
		}
		s.AddResult(labels, &r)
		return s, nil
	case "":
		return nil, fmt.Errorf("%w: the document has no \"schema\" field (want %s or %s)", ErrSchema, SchemaResult, SchemaResults)
	default:
		return nil, fmt.Errorf("%w %q (this cnibench reads %s and %s)", ErrSchema, p.Schema, SchemaResult, SchemaResults)
	}
}

// MaxDocument bounds a results document, gunzipped: a larger file (a
// gzip bomb, /dev/zero) is refused, never read into memory whole.
const MaxDocument = 1 << 30

// maxDocument is MaxDocument (lowered by tests).
var maxDocument int64 = MaxDocument

// ErrTooLarge is a document past MaxDocument.
var ErrTooLarge = errors.New("larger than the 1 GiB a results document may hold")

// ReadFile decodes the document at path; a path ending in .gz is
// gunzipped first (committed data is kept compressed). It reads at most
// MaxDocument bytes (ErrTooLarge past that), and refuses at once what does
// not start as a JSON object.
func ReadFile(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bufio.NewReader(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	br := bufio.NewReaderSize(r, 64<<10)
	// The first byte that is not white space must open an object.
	for {
		c, err := br.ReadByte()
		if err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%s: not a cnibench JSON document: empty", path)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		if c != '{' {
			return nil, fmt.Errorf("%s: not a cnibench JSON document: it starts with %q, not {", path, c)
		}
		br.UnreadByte() //nolint:errcheck // a byte was just read
		break
	}
	data, err := io.ReadAll(io.LimitReader(br, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > maxDocument {
		return nil, fmt.Errorf("%s: %w: not read", path, ErrTooLarge)
	}
	s, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
