package lab

import (
	"fmt"
	"strings"
)

// Evidence is a snapshot of a datapath's counters taken before a
// measurement; End takes the second snapshot and returns the difference as
// metrics (the Metric* names). Build it with BeginEvidence.
type Evidence struct {
	dp     Datapath
	topo   *Topology
	claims PathClaims
	before snapshot
	// wireMTU is the MTU of node1's wire device (0: unknown).
	wireMTU int
}

// snapshot holds counters summed over both nodes, by metric name; errs
// holds what could not be read.
type snapshot struct {
	counters  map[string]uint64
	ctEntries int
	errs      map[string]error
}

// BeginEvidence snapshots the counters that show which path a measurement
// takes in dp (topo is its topology).
func BeginEvidence(dp Datapath, topo *Topology) *Evidence {
	e := &Evidence{dp: dp, topo: topo}
	if c, ok := dp.(Claimer); ok {
		e.claims = c.Claims()
	}
	if topo != nil && topo.Nodes[0] != nil {
		if l, err := topo.Nodes[0].handle.LinkByName(WireIf); err == nil {
			e.wireMTU = l.Attrs().MTU
		}
	}
	e.before = e.snapshot()
	return e
}

// End snapshots again and returns the evidence metrics: deltas of the
// counters, and the conntrack entries after the measurement. A metric that
// could not be read at either end is absent and explained in warnings.
func (e *Evidence) End() (metrics map[string]float64, warnings []string) {
	after := e.snapshot()
	metrics = map[string]float64{}
	for name, a := range after.counters {
		b, ok := e.before.counters[name]
		if !ok {
			continue
		}
		d := float64(a) - float64(b)
		if d < 0 { // a counter reset: not measured
			warnings = append(warnings, fmt.Sprintf("%s went backwards during the repeat; not recorded", name))
			continue
		}
		metrics[name] = d
	}
	if w := checkWireFrames(e.topo, e.wireMTU, metrics); w != "" {
		warnings = append(warnings, w)
	}
	if after.ctEntries >= 0 {
		metrics[MetricConntrackEntries] = float64(after.ctEntries)
	}
	errs := after.errs
	for k, v := range e.before.errs {
		if _, ok := errs[k]; !ok {
			errs[k] = v
		}
	}
	for k, err := range errs {
		warnings = append(warnings, fmt.Sprintf("%s not measured: %v", k, err))
	}
	return metrics, warnings
}

func (e *Evidence) snapshot() snapshot {
	s := snapshot{counters: map[string]uint64{}, ctEntries: -1, errs: map[string]error{}}
	if e.topo == nil {
		return s
	}
	add := func(name string, v uint64) { s.counters[name] += v }
	fail := func(name string, err error) {
		s.errs[name] = err
		delete(s.counters, name)
	}
	entries := 0
	for _, node := range e.topo.Nodes {
		if node == nil {
			continue
		}
		if n, err := node.ConntrackCount(); err != nil {
			s.errs[MetricConntrackEntries] = err
		} else {
			entries += n
		}
		if st, err := ConntrackStats(node); err != nil {
			fail(MetricConntrackDrops, err)
			fail(MetricConntrackInvalid, err)
		} else {
			add(MetricConntrackDrops, st.Drop+st.EarlyDrop+st.InsertFailed)
			add(MetricConntrackInvalid, st.Invalid)
		}
		if ls, err := node.LinkStats(WireIf); err != nil {
			fail(MetricWireTxPackets, err)
			fail(MetricWireTxBytes, err)
		} else {
			add(MetricWireTxPackets, ls.TxPackets)
			add(MetricWireTxBytes, ls.TxBytes)
		}
		if e.claims.NftForward {
			if c, err := NftCounters(node); err != nil {
				fail(MetricConntrackNew, err)
				fail(MetricNftForward, err)
			} else {
				add(MetricConntrackNew, c[RuleCtNew])
				add(MetricNftForward, c[RuleEstablished]+c[RuleInvalid]+c[RulePodToPod])
			}
		}
		if e.claims.VXLAN {
			if ls, err := node.LinkStats(VXLANIf); err != nil {
				fail(MetricVXLANTx, err)
			} else {
				add(MetricVXLANTx, ls.TxPackets)
			}
		}
	}
	if _, ok := s.errs[MetricConntrackEntries]; !ok {
		s.ctEntries = entries
	}
	for name := range s.errs {
		delete(s.counters, name)
	}
	if cr, ok := e.dp.(CounterReporter); ok {
		c, err := cr.Counters()
		if err != nil {
			s.errs["bpf counters"] = err
		} else {
			for k, v := range c {
				_, key, _ := strings.Cut(k, ".")
				if name, ok := bpfCounterMetrics[key]; ok {
					add(name, v)
				}
			}
		}
	}
	return s
}
