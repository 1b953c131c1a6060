package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

func pairResult(start time.Time, m map[string]float64, errMsg string) *result.Result {
	return &result.Result{
		Schema: result.SchemaResult, Start: start,
		Config:  map[string]string{"test": "tcp_stream", "target": "x"},
		Repeats: []result.Repeat{{Index: 0, Start: start, DurationSec: 1, Metrics: m, Error: errMsg}},
	}
}

func TestMergePairs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rs := []*result.Result{
		pairResult(t0, map[string]float64{result.ThroughputBitsPerSec: 8e9, result.LatencyUsP99: 100, result.HostCPUPct: 50, result.TCPRetransmits: 1}, ""),
		pairResult(t0.Add(30*time.Millisecond), map[string]float64{result.ThroughputBitsPerSec: 4e9, result.LatencyUsP99: 300, result.HostCPUPct: 60, result.TCPRetransmits: 2}, ""),
	}
	m, err := mergePairs(rs, []string{"n1→n2", "n2→n1"})
	if err != nil {
		t.Fatal(err)
	}
	got := m.Repeats[0].Metrics
	want := map[string]float64{
		result.ThroughputBitsPerSec:               12e9,
		result.LatencyUsP99:                       300,
		result.TCPRetransmits:                     3,
		result.Pairs:                              2,
		"pair_min_" + result.ThroughputBitsPerSec: 4e9,
		"pair_max_" + result.ThroughputBitsPerSec: 8e9,
		result.PairSpreadPct:                      100 * 4e9 / 6e9,
		result.PairStartSkewMs:                    30,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got[result.HostCPUPct]; ok {
		t.Errorf("host_cpu_pct aggregated; a node's CPU is shared by its pairs")
	}
	for k := range got {
		if _, ok := result.Metrics[k]; !ok {
			t.Errorf("metric %s is not registered in pkg/result", k)
		}
	}
	if m.Config["pairs"] != "2" || m.Config["pair_nodes"] != "n1→n2,n2→n1" || m.Config["target"] != "" {
		t.Errorf("config %v", m.Config)
	}
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "host_cpu_pct") {
		t.Errorf("warnings %q do not name the dropped metric", m.Warnings)
	}
	if _, ok := m.Summary[result.ThroughputBitsPerSec]; !ok {
		t.Errorf("no summary")
	}
}

func TestMergePairsFailedPair(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rs := []*result.Result{
		pairResult(t0, map[string]float64{result.TransPerSec: 10}, ""),
		pairResult(t0, nil, "connection refused"),
	}
	m, err := mergePairs(rs, []string{"a→b", "b→a"})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Repeats[0]; r.Metrics != nil || !strings.Contains(r.Error, "pair 2 (b→a): connection refused") {
		t.Fatalf("repeat %+v: want the failed pair named and no aggregate", r)
	}
}

func TestRunPairs(t *testing.T) {
	pp := pairsPlace{pairs: []pairPlace{
		{place: place{"ns", "cli-a"}, target: "10.0.1.2:12865", name: "n1→n2"},
		{place: place{"ns", "cli-p2"}, target: "10.0.0.7:12865", name: "n2→n1"},
	}}
	var mu sync.Mutex
	seen := map[string]string{}
	run := func(_ context.Context, p place, args []string) ([]byte, []byte, error) {
		mu.Lock()
		seen[p.pod] = strings.Join(args, " ")
		mu.Unlock()
		if p.pod == "cli-p2" && strings.Contains(seen[p.pod], "fail") {
			return nil, []byte("boom\n"), fmt.Errorf("exit 1")
		}
		b, _ := json.Marshal(pairResult(time.Unix(1, 0), map[string]float64{result.TransPerSec: 5}, ""))
		return b, nil, nil
	}
	out, _, err := runPairs(context.Background(), pp, []string{"run", "--target", "10.0.1.2:12865", "--test", "tcp_rr"}, run)
	if err != nil {
		t.Fatal(err)
	}
	if seen["cli-p2"] != "run --target 10.0.0.7:12865 --test tcp_rr" {
		t.Errorf("pair 2 ran %q", seen["cli-p2"])
	}
	var r result.Result
	if err := json.Unmarshal(out, &r); err != nil || r.Repeats[0].Metrics[result.TransPerSec] != 10 {
		t.Fatalf("merged %s (%v)", out, err)
	}
	_, _, err = runPairs(context.Background(), pp, []string{"run", "--target", "10.0.1.2:12865", "fail"}, run)
	if err == nil || !strings.Contains(err.Error(), "pair 2 (n2→n1): boom") {
		t.Fatalf("err = %v, want pair 2 named with its stderr", err)
	}
}
