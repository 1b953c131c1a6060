package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"
)

// csvLead and csvTail are the CSV's fixed columns around the labels.
var (
	csvLead = []string{"results_start", "tool_version", "tool_commit", "host"}
	csvTail = []string{"repeat", "repeat_start", "duration_sec", "metric", "unit", "value", "error"}
)

// WriteCSV writes one row per measurement (input × run × repeat × metric)
// under a header: the run's identity (results_start, tool_version,
// tool_commit, host), one column per label (the union of the runs' label
// keys, sorted; empty when a run lacks the label; a key clashing with a
// fixed column is prefixed "exported_"), then repeat, repeat_start
// (RFC 3339), duration_sec, metric, unit, value and error (a failed
// repeat's error, whose values the summaries leave out). Values are
// written with the fewest digits that read back exactly.
func WriteCSV(w io.Writer, in []Input) error {
	keys := labelKeys(in)
	reserved := map[string]bool{}
	for _, c := range append(append([]string{}, csvLead...), csvTail...) {
		reserved[c] = true
	}
	names, err := renamed(keys, reserved, identity)
	if err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	cw := csv.NewWriter(w)
	header := append([]string{}, csvLead...)
	for _, k := range keys {
		header = append(header, names[k])
	}
	header = append(header, csvTail...)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	row := make([]string, 0, len(header))
	err = measurements(in, func(m measurement) error {
		s := m.in.Set
		row = append(row[:0], formatTime(s.Start), s.Tool.Version, s.Tool.Commit, s.Host.Hostname)
		for _, k := range keys {
			row = append(row, m.run.Labels[k])
		}
		row = append(row,
			strconv.Itoa(m.rep.Index),
			formatTime(m.rep.Start),
			strconv.FormatFloat(m.rep.DurationSec, 'g', -1, 64),
			m.metric,
			unit(m.metric),
			strconv.FormatFloat(m.value, 'g', -1, 64),
			m.rep.Error,
		)
		return cw.Write(row)
	})
	if err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}

// formatTime is RFC 3339 in UTC with the fraction the time has; the zero
// time (absent in the document) is empty.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
