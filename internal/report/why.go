package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// The "why" of the summary: short statements per datapath, each written
// from a figure this set measured. A rule names the metric it reads and is
// skipped when no run of the datapath has it, so a statement is never made
// without its evidence; a new metric plugs in with one line in whyRules.

// whyRule turns one metric into a statement ("" to say nothing).
type whyRule struct {
	Metric string
	Say    func(e *evidence, metric string) string
	// VsBase statements are changes against the baseline; they are
	// gathered into one "vs baseline: …" statement.
	VsBase bool
}

// minWhyChange is the smallest change against the baseline a statement
// reports (smaller differences are within the noise of a typical run).
const minWhyChange = 0.05

// whyRules run in order; their statements join with "; ".
var whyRules = []whyRule{
	// The packet path, from the datapath's own counters (internal/lab's
	// evidence metrics).
	{Metric: "bpf_redirect_peer_packets", Say: count("%s packets into pods by bpf_redirect_peer")},
	{Metric: "bpf_redirect_host_packets", Say: count("%s packets out of the pods' host veths by bpf_redirect (through the backlog)")},
	{Metric: "bpf_redirect_neigh_packets", Say: count("%s out of the node by bpf_redirect_neigh")},
	{Metric: "bpf_pass_packets", Say: count("%s passed to the node's stack")},
	{Metric: "bpf_drop_packets", Say: countIfAny("%s dropped by the BPF program")},
	{Metric: "bpf_policy_denied_packets", Say: countIfAny("%s denied by BPF policy")},
	{Metric: "bpf_ct_new_packets", Say: bpfCT},
	{Metric: "nft_forward_packets", Say: countOrNone("%s packets through the nodes' netfilter forward chain", "no netfilter: 0 packets in the nodes' forward chain")},
	{Metric: result.ConntrackEntries, Say: conntrackEntries},
	{Metric: "conntrack_new_packets", Say: countIfAny("%s forwarded packets in conntrack state new")},
	{Metric: "conntrack_drops", Say: countIfAny("%s conntrack drops")},
	{Metric: "conntrack_invalid_packets", Say: countIfAny("%s packets conntrack found invalid")},
	{Metric: "vxlan_tx_packets", Say: count("VXLAN: %s packets encapsulated")},
	{Metric: "wire_tx_packets", Say: wirePackets},
	{Metric: "path_mtu", Say: pathMTU}, // a config key, not a metric
	{Metric: "client_ip_frag_creates", Say: countIfAny("IP fragmentation: %s fragments created", "server_ip_frag_creates")},
	{Metric: "server_ip_reasm_oks", Say: countIfAny("%s datagrams reassembled", "client_ip_reasm_oks")},
	{Metric: "server_ip_reasm_fails", Say: countIfAny("%s reassemblies failed", "client_ip_reasm_fails")},
	{Metric: result.LossPct, Say: maxPct("UDP loss up to %s", 1)},
	{Metric: "time_wait_at_start", Say: maxCountIfAny("up to %s TIME_WAIT sockets at a cell's start")},
	{Metric: result.HostCPUSoftirqPct, Say: softirqShare},
	// The cost, against the node-to-node baseline.
	{Metric: result.CPUUsPerTrans, Say: vsBaseline("CPU per transaction"), VsBase: true},
	{Metric: result.CPUPctPer100Gbit, Say: vsBaseline("CPU per Gbit"), VsBase: true},
	{Metric: result.LatencyUsP99, Say: vsBaseline("p99 latency"), VsBase: true},
}

// evidence is what the rules read about one datapath: its main runs (the
// default MTU, no scenario) and the baseline's runs to compare with.
type evidence struct {
	m    *model
	dp   string
	runs []*result.Run
}

// has reports whether any run of the datapath measured metric (or, for
// path_mtu, recorded it in its config).
func (e *evidence) has(metric string) bool {
	for _, r := range e.runs {
		if metric == "path_mtu" {
			if _, ok := e.pathMTU(r); ok {
				return true
			}
			continue
		}
		if len(Values(r, metric)) > 0 {
			return true
		}
	}
	return false
}

// total is the sum of metric over every measured repeat of the datapath.
func (e *evidence) total(metric string) float64 {
	t := 0.0
	for _, r := range e.runs {
		for _, v := range Values(r, metric) {
			t += v
		}
	}
	return t
}

// max is the largest value of metric in any repeat.
func (e *evidence) max(metric string) float64 {
	m := math.Inf(-1)
	for _, r := range e.runs {
		for _, v := range Values(r, metric) {
			m = math.Max(m, v)
		}
	}
	return m
}

// vsBaseline is the geometric mean of datapath ÷ baseline medians of
// metric over the cells both measured, whether its 95 % interval excludes
// 1 (computed as for grades, ratioLog), and the number of cells.
func (e *evidence) vsBaseline(metric string) (ratio float64, clear bool, n int) {
	logSum, varSum := 0.0, 0.0
	for _, r := range e.runs {
		b := baselineRun(e.m.main, r.Labels)
		if b == nil || b == r || r.NotTrusted != "" || b.NotTrusted != "" {
			// A cell measured on a busy host states nothing.
			continue
		}
		lr, hw, ok := ratioLog(r, b, metric)
		if !ok {
			continue
		}
		logSum += lr
		varSum += hw * hw
		n++
	}
	if n == 0 {
		return math.NaN(), false, 0
	}
	mean := logSum / float64(n)
	hw := math.Sqrt(varSum) / float64(n)
	return math.Exp(mean), !math.IsNaN(hw) && math.Abs(mean) > hw, n
}

// pathMTU is the path MTU the client measured for r (path_mtu), or the
// one the lab expected (expected_path_mtu).
func (e *evidence) pathMTU(r *result.Run) (int, bool) {
	for _, k := range []string{"path_mtu", "expected_path_mtu"} {
		if v, err := strconv.Atoi(r.Config[k]); err == nil && v > 0 {
			return v, true
		}
	}
	return 0, false
}

// count states the total of a counter.
func count(format string) func(*evidence, string) string {
	return func(e *evidence, metric string) string {
		return fmt.Sprintf(format, countText(e.total(metric)))
	}
}

// countIfAny states the total of a counter (plus the also counters, e.g.
// the other end's) only when it is not zero: drops and fragments are news,
// their absence is not.
func countIfAny(format string, also ...string) func(*evidence, string) string {
	return func(e *evidence, metric string) string {
		t := e.total(metric)
		for _, a := range also {
			t += e.total(a)
		}
		if t <= 0 {
			return ""
		}
		return fmt.Sprintf(format, countText(t))
	}
}

// maxCountIfAny states the largest value of a gauge when it is not zero.
func maxCountIfAny(format string) func(*evidence, string) string {
	return func(e *evidence, metric string) string {
		v := e.max(metric)
		if v <= 0 || math.IsInf(v, 0) {
			return ""
		}
		return fmt.Sprintf(format, countText(v))
	}
}

// bpfCT states the BPF connection-tracking map's work: packets that
// created an entry and, when measured, packets of established flows.
func bpfCT(e *evidence, metric string) string {
	s := fmt.Sprintf("BPF connection tracking: %s new", countText(e.total(metric)))
	if e.has("bpf_ct_established_packets") {
		s += fmt.Sprintf(", %s established packets", countText(e.total("bpf_ct_established_packets")))
	}
	return s
}

// wirePackets states the packets on the wire and, with wire_tx_bytes,
// their average size (above the MTU: segmentation offload carried them).
func wirePackets(e *evidence, metric string) string {
	p := e.total(metric)
	if p <= 0 {
		return ""
	}
	s := fmt.Sprintf("%s packets on the wire", countText(p))
	if e.has("wire_tx_bytes") {
		s += fmt.Sprintf(" (%s bytes on average)", countText(e.total("wire_tx_bytes")/p))
	}
	return s
}

// softirqShare states softirq's share of the run's CPU (the host's in
// documents without run_cpu_pct) against the baseline's, when they differ
// by at least 5 points.
func softirqShare(e *evidence, metric string) string {
	share := func(runs []*result.Run) (float64, bool) {
		var si, all float64
		for _, r := range runs {
			// The run's CPU, other programs' left out, where measured.
			b := Values(r, result.RunCPUPct)
			if len(b) == 0 {
				b = Values(r, result.HostCPUPct)
			}
			a := Values(r, metric)
			if len(a) == 0 || len(a) != len(b) {
				continue
			}
			for i := range a {
				si += a[i]
				all += b[i]
			}
		}
		return 100 * si / all, all > 0
	}
	d, ok1 := share(e.runs)
	b, ok2 := share(filter(e.m.main, map[string]string{LabelDatapath: BaselineDatapath}))
	if !ok1 || !ok2 || math.Abs(d-b) < 5 {
		return ""
	}
	return fmt.Sprintf("softirq %.0f"+nbsp+"%% of host CPU (baseline %.0f"+nbsp+"%%)", d, b)
}

// countOrNone states the total, or none when it is zero.
func countOrNone(format, none string) func(*evidence, string) string {
	return func(e *evidence, metric string) string {
		t := e.total(metric)
		if t <= 0 {
			return none
		}
		return fmt.Sprintf(format, countText(t))
	}
}

// maxPct states the largest value of a percentage when it reaches least.
func maxPct(format string, least float64) func(*evidence, string) string {
	return func(e *evidence, metric string) string {
		v := e.max(metric)
		if v < least || math.IsInf(v, 0) {
			return ""
		}
		return fmt.Sprintf(format, Num(v)+nbsp+"%")
	}
}

// vsBaseline states the change of metric against the baseline when it is
// at least minWhyChange and its 95 % interval excludes no change (a noisy
// difference is not evidence): "−22 % CPU per transaction".
func vsBaseline(what string) func(*evidence, string) string {
	return func(e *evidence, metric string) string {
		r, clear, n := e.vsBaseline(metric)
		if n == 0 || !clear || math.Abs(r-1) < minWhyChange {
			return ""
		}
		return fmt.Sprintf("%s %s", signedPct(100*(r-1)), what)
	}
}

// conntrackEntries: the most entries the nodes held after any repeat.
func conntrackEntries(e *evidence, metric string) string {
	v := e.max(metric)
	switch {
	case math.IsInf(v, 0):
		return ""
	case v <= 0:
		return "no conntrack: 0 entries"
	}
	return fmt.Sprintf("conntrack engaged: %s entries", countText(v))
}

// pathMTU: a path MTU below the baseline's (the wire's) is encapsulation
// overhead on every packet.
func pathMTU(e *evidence, _ string) string {
	lowest := 0
	for _, r := range e.runs {
		if v, ok := e.pathMTU(r); ok && (lowest == 0 || v < lowest) {
			lowest = v
		}
	}
	wire := 0
	for _, r := range e.m.main {
		if r.Labels[LabelDatapath] != BaselineDatapath {
			continue
		}
		if v, ok := e.pathMTU(r); ok && v > wire {
			wire = v
		}
	}
	if wire == 0 {
		wire, _ = strconv.Atoi(e.m.defaultMTU)
	}
	if lowest == 0 || wire == 0 || lowest >= wire {
		return ""
	}
	return fmt.Sprintf("path MTU %d of %d (%d bytes per packet for encapsulation)", lowest, wire, wire-lowest)
}

// nbsp keeps a number and its unit on one line when text is wrapped.
const nbsp = "\u00a0"

// countText renders a count compactly: 263 k, 1.2 M, 950 (the number and
// its prefix joined by a no-break space).
func countText(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return Num(v/1e9) + nbsp + "G"
	case a >= 1e6:
		return Num(v/1e6) + nbsp + "M"
	case a >= 1e4:
		return Num(v/1e3) + nbsp + "k"
	}
	return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
}

// signedPct is "+12 %" or "−22 %" (a real minus sign).
func signedPct(p float64) string {
	s := fmt.Sprintf("%+.0f"+nbsp+"%%", p)
	return strings.Replace(s, "-", "−", 1)
}

// why returns the statements for a datapath, in rule order.
func (m *model) why(dp string) []string {
	e := &evidence{m: m, dp: dp, runs: filter(m.main, map[string]string{LabelDatapath: dp})}
	out := e.statements(whyRules)
	if s := m.cpuWhy(dp); s != "" {
		out = append(out, s)
	}
	return out
}

func (e *evidence) statements(rules []whyRule) []string {
	var out, vs []string
	for _, r := range rules {
		if !e.has(r.Metric) {
			continue
		}
		s := r.Say(e, r.Metric)
		switch {
		case s == "":
		case r.VsBase:
			vs = append(vs, s)
		default:
			out = append(out, s)
		}
	}
	if len(vs) > 0 {
		out = append(out, "vs baseline: "+strings.Join(vs, ", "))
	}
	return out
}

// whyBlocks are the summary's explanation: one item per datapath with
// evidence (the baseline, the reference, has none).
func (m *model) whyBlocks() []block {
	var items []string
	for _, dp := range m.datapaths {
		if dp == BaselineDatapath || !m.measured(dp) {
			continue
		}
		if st := m.why(dp); len(st) > 0 {
			items = append(items, show(dp)+": "+strings.Join(st, "; "))
		}
	}
	if len(items) == 0 {
		return nil
	}
	intro := "Why, from this run's evidence (counters are totals over the measured repeats at the default MTU; changes vs baseline are geometric means over the cells both measured, stated when at least 5 % and outside the 95 % interval; a statement is left out when its evidence was not measured):"
	if len(m.cpuGroups()) > 0 {
		intro = strings.TrimSuffix(intro, "):") + "; CPU profile: the symbol families whose share of the samples differs from the reference datapath's by at least 2 pp, significantly — see CPU profiles):"
	}
	return []block{
		{Para: intro},
		{List: items},
	}
}
