package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// PathCrossNodePairs is --pairs N: N cross-node clients at once, each
// against its own server on its own pair of nodes; one result holds their
// aggregate and the spread between the pairs.
const PathCrossNodePairs = "cross-node-pairs"

// pairsPlace is where the clients of --pairs N run: one client pod per
// pair; the suite's client arguments are pair 0's, and the others' target
// is substituted.
type pairsPlace struct {
	pairs []pairPlace
}

// pairPlace is one pair: the client's pod, its server's address, and
// the pair's name (client node→server node).
type pairPlace struct {
	place  place
	target string
	name   string
}

func (p pairsPlace) String() string {
	s := make([]string, len(p.pairs))
	for i, x := range p.pairs {
		s[i] = x.place.String()
	}
	return strings.Join(s, "+")
}

// pairArgs are args with pair 0's --target replaced by the pair's.
func pairArgs(args []string, from, to string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--target" && out[i+1] == from {
			out[i+1] = to
		}
	}
	return out
}

// runPairs runs the client of args in every pair at once and returns the
// merged result as the JSON a single client prints. run runs one client.
func runPairs(ctx context.Context, pp pairsPlace, args []string, run func(context.Context, place, []string) ([]byte, []byte, error)) ([]byte, []byte, error) {
	if len(pp.pairs) == 0 {
		return nil, nil, fmt.Errorf("kubernetes: no pairs to run")
	}
	type out struct {
		stdout, stderr []byte
		err            error
	}
	outs := make([]out, len(pp.pairs))
	var wg sync.WaitGroup
	for i, p := range pp.pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := pairArgs(args, pp.pairs[0].target, p.target)
			so, se, err := run(ctx, p.place, a)
			outs[i] = out{so, se, err}
		}()
	}
	wg.Wait()
	var rs []*result.Result
	var names []string
	var stderr []byte
	for i, o := range outs {
		name := pp.pairs[i].name
		var r result.Result
		if err := json.Unmarshal(o.stdout, &r); err != nil || r.Schema != result.SchemaResult {
			msg := firstLine(string(o.stderr))
			if msg == "" && o.err != nil {
				msg = o.err.Error()
			}
			if msg == "" {
				msg = "no result"
			}
			// The aggregate of N-1 pairs is not the aggregate: the cell
			// fails, naming the pair.
			return nil, []byte(fmt.Sprintf("pair %d (%s): %s\n", i+1, name, msg)), fmt.Errorf("pair %d (%s): %s", i+1, name, msg)
		}
		rs = append(rs, &r)
		names = append(names, name)
		stderr = append(stderr, o.stderr...)
	}
	m, err := mergePairs(rs, names)
	if err != nil {
		return nil, stderr, err
	}
	b, err := json.Marshal(m)
	return b, stderr, err
}

// How each client metric aggregates across pairs: rates and counts add
// up (the pairs' traffic is concurrent), latencies take the worst pair
// (a percentile of the union is not derivable from the pairs'
// percentiles; the worst pair's bounds it from above). What is neither is
// dropped, and the result says which (a node's CPU is shared by the pairs
// on it: a sum would count it twice).
var (
	pairSum = map[string]bool{
		result.ThroughputBitsPerSec: true, result.ThroughputRxBitsPerSec: true, result.ThroughputTxBitsPerSec: true,
		result.TransPerSec: true, result.DatagramsSent: true, result.DatagramsReceived: true, result.DatagramsLost: true,
		result.DatagramsDuplicated: true, result.DatagramsReordered: true, result.TCPRetransmits: true, result.Errors: true,
		result.ClientCPUPct: true, result.ServerCPUPct: true, result.EchoRequestsSent: true, result.EchoRequestsLost: true,
		result.DatagramsReceivedPerSec: true,
	}
	pairMaxPrefixes = []string{"latency_us_", "connect_us_"}
)

// primaryMetric is the metric the spread is computed on: throughput for
// streams, transactions per second otherwise.
func primaryMetric(m map[string]float64) string {
	if _, ok := m[result.ThroughputBitsPerSec]; ok {
		return result.ThroughputBitsPerSec
	}
	return result.TransPerSec
}

// mergePairs combines the results of clients run at once, one per pair
// (names[i] is rs[i]'s pair), repeat by repeat: aggregate metrics, the
// primary metric's minimum, maximum and spread over the pairs, and the
// skew of their start times. A repeat that failed in any pair fails.
func mergePairs(rs []*result.Result, names []string) (*result.Result, error) {
	if len(rs) == 0 {
		return nil, fmt.Errorf("no pair results")
	}
	out := &result.Result{
		Schema: rs[0].Schema, Tool: rs[0].Tool, Start: rs[0].Start, Host: rs[0].Host,
		Config: map[string]string{},
	}
	for k, v := range rs[0].Config {
		out.Config[k] = v
	}
	out.Config["pairs"] = strconv.Itoa(len(rs))
	out.Config["pair_nodes"] = strings.Join(names, ",")
	delete(out.Config, "target")
	n := len(rs[0].Repeats)
	dropped := map[string]bool{}
	var perPair []string
	for i, r := range rs {
		if r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if len(r.Repeats) != n {
			return nil, fmt.Errorf("pair %d (%s) has %d repeats, pair 1 has %d", i+1, names[i], len(r.Repeats), n)
		}
		for _, w := range r.Warnings {
			out.Warnings = append(out.Warnings, fmt.Sprintf("pair %d (%s): %s", i+1, names[i], w))
		}
	}
	for ri := 0; ri < n; ri++ {
		rep := result.Repeat{Index: rs[0].Repeats[ri].Index, Start: rs[0].Repeats[ri].Start}
		var errs []string
		var starts []time.Time
		for i, r := range rs {
			x := r.Repeats[ri]
			if x.Error != "" {
				errs = append(errs, fmt.Sprintf("pair %d (%s): %s", i+1, names[i], x.Error))
			}
			starts = append(starts, x.Start)
			if x.DurationSec > rep.DurationSec {
				rep.DurationSec = x.DurationSec
			}
		}
		if len(errs) > 0 {
			rep.Error = strings.Join(errs, "; ")
			out.Repeats = append(out.Repeats, rep)
			continue
		}
		m := map[string]float64{}
		for _, r := range rs {
			for k, v := range r.Repeats[ri].Metrics {
				switch {
				case pairSum[k]:
					m[k] += v
				case hasAnyPrefix(k, pairMaxPrefixes):
					m[k] = math.Max(m[k], v)
				default:
					dropped[k] = true
				}
			}
		}
		if s, ok := m[result.DatagramsSent]; ok && s > 0 {
			m[result.LossPct] = 100 * m[result.DatagramsLost] / s
			delete(dropped, result.LossPct)
		}
		prim := primaryMetric(rs[0].Repeats[ri].Metrics)
		vals := make([]float64, len(rs))
		for i, r := range rs {
			vals[i] = r.Repeats[ri].Metrics[prim]
		}
		lo, hi, mean := slices.Min(vals), slices.Max(vals), 0.0
		for _, v := range vals {
			mean += v / float64(len(vals))
		}
		m[result.Pairs] = float64(len(rs))
		m["pair_min_"+prim] = lo
		m["pair_max_"+prim] = hi
		if mean > 0 {
			m[result.PairSpreadPct] = 100 * (hi - lo) / mean
		}
		first, last := starts[0], starts[0]
		for _, s := range starts {
			if s.Before(first) {
				first = s
			}
			if s.After(last) {
				last = s
			}
		}
		m[result.PairStartSkewMs] = float64(last.Sub(first).Microseconds()) / 1000
		rep.Start = first
		rep.Metrics = m
		if ri == 0 {
			for i, v := range vals {
				perPair = append(perPair, fmt.Sprintf("%s=%.4g", names[i], v))
			}
			out.Config["pair_metric"] = prim
		}
		out.Repeats = append(out.Repeats, rep)
	}
	if len(perPair) > 0 {
		out.Config["pair_values_first_repeat"] = strings.Join(perPair, ",")
	}
	if len(dropped) > 0 {
		keys := make([]string, 0, len(dropped))
		for k := range dropped {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out.Warnings = append(out.Warnings, "not aggregated over the pairs (neither a rate nor a latency; a node's CPU is shared by its pairs): "+strings.Join(keys, ", "))
	}
	out.Summary = result.SummarizeRepeats(out.Repeats)
	return out, nil
}

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
