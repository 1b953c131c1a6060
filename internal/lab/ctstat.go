package lab

import (
	"fmt"
	"strconv"
	"strings"
)

// CTStats are a namespace's connection-tracking statistics, summed over
// CPUs (/proc/net/stat/nf_conntrack, as `conntrack -S` shows them).
type CTStats struct {
	// Insert counts entries added to the table (new connections confirmed).
	Insert uint64
	// InsertFailed counts entries that could not be inserted (clashes).
	InsertFailed uint64
	// Drop counts packets dropped because an entry could not be created
	// (table full), EarlyDrop entries evicted to make room.
	Drop, EarlyDrop uint64
	// Invalid counts packets conntrack could not track.
	Invalid uint64
}

// ParseCTStats parses /proc/net/stat/nf_conntrack: a header naming the
// columns, then one line of hexadecimal counters per CPU. The "entries"
// column is a global gauge repeated on every line and is ignored.
func ParseCTStats(text string) (CTStats, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		return CTStats{}, fmt.Errorf("nf_conntrack stats: %d lines, want a header and one line per CPU", len(lines))
	}
	header := strings.Fields(lines[0])
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"insert", "insert_failed", "drop", "early_drop", "invalid"} {
		if _, ok := col[need]; !ok {
			return CTStats{}, fmt.Errorf("nf_conntrack stats: no %q column in header %q", need, lines[0])
		}
	}
	var s CTStats
	for n, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != len(header) {
			return CTStats{}, fmt.Errorf("nf_conntrack stats line %d: %d fields, header has %d", n+2, len(f), len(header))
		}
		get := func(name string) (uint64, error) {
			v, err := strconv.ParseUint(f[col[name]], 16, 64)
			if err != nil {
				return 0, fmt.Errorf("nf_conntrack stats line %d, %s: %w", n+2, name, err)
			}
			return v, nil
		}
		for _, c := range []struct {
			name string
			dst  *uint64
		}{{"insert", &s.Insert}, {"insert_failed", &s.InsertFailed}, {"drop", &s.Drop}, {"early_drop", &s.EarlyDrop}, {"invalid", &s.Invalid}} {
			v, err := get(c.name)
			if err != nil {
				return CTStats{}, err
			}
			*c.dst += v
		}
	}
	return s, nil
}
