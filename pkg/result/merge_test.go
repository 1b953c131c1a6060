package result

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMerge(t *testing.T) {
	mk := func(start time.Time, cpu string, labels map[string]string, vals ...float64) *Set {
		s := &Set{Schema: SchemaResults, Start: start, End: start.Add(time.Minute), Host: Host{CPUModel: cpu, Cores: 2, Kernel: "6.18"}}
		r := Run{Labels: labels}
		for i, v := range vals {
			r.Repeats = append(r.Repeats, Repeat{Index: i, Metrics: map[string]float64{TransPerSec: v}})
		}
		r.Summary = SummarizeRepeats(r.Repeats)
		s.Runs = append(s.Runs, r)
		return s
	}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := mk(t0, "X", map[string]string{"test": "tcp_rr"}, 1, 2, 3)
	b := mk(t0.Add(-time.Hour), "X", map[string]string{"test": "tcp_rr"}, 4, 5, 6)
	b.Runs = append(b.Runs, mk(t0, "X", map[string]string{"test": "tcp_crr"}, 7).Runs...)
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Runs) != 2 {
		t.Fatalf("%d runs, want 2 (tcp_rr pooled, tcp_crr kept)", len(m.Runs))
	}
	rr := m.Runs[0]
	if len(rr.Repeats) != 6 || rr.Repeats[5].Index != 5 || rr.Summary[TransPerSec].N != 6 || rr.Summary[TransPerSec].Median != 3.5 {
		t.Errorf("pooled run: %d repeats, summary %+v", len(rr.Repeats), rr.Summary[TransPerSec])
	}
	if !m.Start.Equal(t0.Add(-time.Hour)) || !m.End.Equal(t0.Add(time.Minute)) {
		t.Errorf("start %v end %v", m.Start, m.End)
	}
	if len(a.Runs[0].Repeats) != 3 || a.Runs[0].Repeats[0].Index != 0 {
		t.Error("the inputs were modified")
	}
	if _, err := Merge(a, mk(t0, "Y", map[string]string{"test": "tcp_rr"}, 1)); err == nil || !strings.Contains(err.Error(), "another machine") {
		t.Errorf("another machine: err %v", err)
	}
	if _, err := Merge(); err == nil {
		t.Error("no documents: want an error")
	}
}

func TestReadFileGzip(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := Write(zw, &Set{Schema: SchemaResults, Runs: []Run{{Labels: map[string]string{"test": "tcp_rr"}}}}); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	p := filepath.Join(dir, "results.json.gz")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadFile(p)
	if err != nil || len(s.Runs) != 1 {
		t.Fatalf("read %s: %v, %+v", p, err, s)
	}
	if err := os.WriteFile(p, []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "results.json.gz") {
		t.Errorf("not gzip: err %v, want one naming the file", err)
	}
}

// ReadFile is bounded: what does not start as a JSON object is refused at
// once (/dev/zero), and a document past the limit is not read whole.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big.json", `{"schema":"cnibench/results/v1","runs":[]}`+strings.Repeat(" ", 100))
	defer func(v int64) { maxDocument = v }(maxDocument)
	maxDocument = 64
	for _, tc := range []struct{ path, want string }{
		{"/dev/zero", `/dev/zero: not a cnibench JSON document: it starts with '\x00', not {`},
		{write("empty.json", " \n"), "not a cnibench JSON document: empty"},
		{write("text.json", "hello"), `it starts with 'h', not {`},
		{big, "big.json: larger than the 1 GiB a results document may hold: not read"},
	} {
		_, err := ReadFile(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadFile(%s) = %v, want an error with %q", tc.path, err, tc.want)
		}
	}
	if _, err := ReadFile(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("not ErrTooLarge: %v", err)
	}
	maxDocument = 1 << 20
	if _, err := ReadFile(big); err != nil {
		t.Errorf("within the limit: %v", err)
	}
}
