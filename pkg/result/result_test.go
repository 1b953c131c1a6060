package result

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	r := &Result{Schema: SchemaResult, Start: time.Unix(0, 0).UTC(), Config: map[string]string{"test": "tcp_rr", "flows": "1", "target": "h"},
		Repeats: []Repeat{{Metrics: map[string]float64{TransPerSec: 10}}, {Metrics: map[string]float64{TransPerSec: 20}}, {Error: "boom"}}}
	r.Summarize()
	if s := r.Summary[TransPerSec]; s.N != 2 || s.Median != 15 {
		t.Fatalf("summary over successful repeats: %+v", s)
	}
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatal(err)
	}
	set, err := Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Runs) != 1 || set.Runs[0].Labels["test"] != "tcp_rr" || set.Schema != SchemaResults {
		t.Fatalf("single result as a set: %+v", set)
	}
	if got := set.Find(map[string]string{"test": "tcp_rr"}); len(got) != 1 {
		t.Fatalf("Find: %d runs", len(got))
	}
	if got := set.Find(map[string]string{"test": "tcp_crr"}); len(got) != 0 {
		t.Fatalf("Find of another test: %d runs", len(got))
	}

	bad := []struct{ in, want string }{
		{`{"schema":"cnibench/result/v9"}`, `unknown schema "cnibench/result/v9"`},
		{`{"runs":[]}`, `no "schema" field`},
		{`not json`, "not a cnibench JSON document"},
		{`{"schema":"cnibench/results/v1","runs":"x"}`, "decode cnibench/results/v1"},
	}
	for _, b := range bad {
		_, err := Decode([]byte(b.in))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Decode(%s) = %v, want %q", b.in, err, b.want)
		}
	}
	if _, err := Decode([]byte(`{"schema":"x"}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("unknown schema is not ErrSchema: %v", err)
	}
}

func TestLabelKey(t *testing.T) {
	if got := LabelKey(map[string]string{"b": "2", "a": "1"}); got != "a=1,b=2" {
		t.Fatalf("LabelKey = %q", got)
	}
}
