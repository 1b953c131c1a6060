package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The egress-load comparisons (-tests egress-load, issue 10 item 5):
// cnibench's own loaders of the egress scenario's deny sets against the
// tools' bulk loaders on the same set, each trial in a fresh network
// namespace, rounds alternating order as in the plan (plan.go).
const (
	// egressTest is the -tests value that selects these comparisons.
	egressTest = "egress-load"
	// egressN, egressSeed and egressMust give the set: Generate(seed, 1M,
	// 240.0.0.1), as the egress scenario's big-load tests use.
	egressN    = 1_000_000
	egressSeed = 1
	egressMust = "240.0.0.1"
	// egressDev is the interface the filters match (a veth whose peer stays
	// in the same throwaway namespace).
	egressDev = "n0"
	// egressEBPFLimit is the absolute target for ebpf-lpm's Load.
	egressEBPFLimit = 300 * time.Millisecond
)

// EgressRow is one egress-load comparison: cnibench's mechanism against a
// peer's bulk loader (Peer empty: an absolute target, ebpf-lpm).
type EgressRow struct {
	Name      string `json:"name"`
	Mechanism string `json:"mechanism"`
	Peer      string `json:"peer,omitempty"`
	PeerCmd   string `json:"peer_cmd,omitempty"`
	// TargetRatio: the speed-up peer_time/cnibench_time must be at least
	// this (comparisons with a peer).
	TargetRatio float64 `json:"target_ratio,omitempty"`
	// TargetSec: cnibench's load time must be below this (absolute rows).
	TargetSec float64 `json:"target_sec,omitempty"`
	// RSSLimit: cnibench's loader process's VmHWM must stay below it (0: none).
	RSSLimit int64         `json:"rss_limit_bytes,omitempty"`
	Trials   []EgressTrial `json:"trials"`
	// Filled in by finish.
	Cnibench   *Spread   `json:"cnibench_sec,omitempty"`
	PeerSec    *Spread   `json:"peer_sec,omitempty"`
	Ratios     []float64 `json:"ratios,omitempty"`
	CI         *RatioCI  `json:"ratio_ci,omitempty"`
	TimeCI     *RatioCI  `json:"time_ci_sec,omitempty"` // absolute rows: HL of the times
	Verdict    string    `json:"verdict"`
	RSSMax     int64     `json:"cnibench_vmhwm_max_bytes,omitempty"`
	PeerRSSMax int64     `json:"peer_maxrss_max_bytes,omitempty"`
	RSSVerdict string    `json:"rss_verdict,omitempty"`
	Kind       string    `json:"kind"`
	Warnings   []string  `json:"warnings,omitempty"`
}

// EgressTrial is one load.
type EgressTrial struct {
	Round int    `json:"round"`
	Side  string `json:"side"`
	Order int    `json:"order"`
	// Sec is the load time: for cnibench from Load's start until it
	// returned with the filter attached, in the loader process; for a peer
	// the wall time of its process, from start to exit.
	Sec *float64 `json:"sec,omitempty"`
	// VmHWM is the peak RSS of the loader process (cnibench: the helper
	// process's own VmHWM; peer: GNU time's maximum RSS).
	VmHWM int64 `json:"vmhwm_bytes,omitempty"`
	// RSSBefore is the cnibench helper's VmRSS just before Load (after
	// generating the set): what the set itself and the runtime take.
	RSSBefore int64 `json:"rss_before_load_bytes,omitempty"`
	// ExternalPeakRSS is the peak RSS of programs cnibench's loader runs
	// (ipset restore, iptables-restore).
	ExternalPeakRSS int64  `json:"external_peak_rss_bytes,omitempty"`
	Method          string `json:"method,omitempty"`
	Error           string `json:"error,omitempty"`
}

// egressRows are the comparisons, in run order.
func egressRows() []*EgressRow {
	return []*EgressRow{
		{Name: "nftables vs nft -f", Mechanism: "nftables", Peer: "nft", PeerCmd: "nft -f FILE (same table, chain, interval set, rule)", TargetRatio: 2.0, RSSLimit: 200 << 20},
		{Name: "ipset vs ipset restore", Mechanism: "ipset", Peer: "ipset", PeerCmd: "ipset restore < FILE (same create/add lines)", TargetRatio: 1.0},
		{Name: "ebpf-lpm, absolute", Mechanism: "ebpf-lpm", TargetSec: egressEBPFLimit.Seconds(), RSSLimit: 100 << 20},
	}
}

// childResult is what the helper process (egress-load-child) prints.
type childResult struct {
	Sec             float64 `json:"sec"`
	VmHWM           int64   `json:"vmhwm_bytes"`
	RSSBefore       int64   `json:"rss_before_load_bytes"`
	ExternalPeakRSS int64   `json:"external_peak_rss_bytes"`
	Method          string  `json:"method"`
}

func parseChildResult(out []byte) (childResult, error) {
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("parse helper output %q: %w", tailString(string(out), 200), err)
	}
	if !(r.Sec > 0) || r.VmHWM <= 0 {
		return r, fmt.Errorf("helper output %q: load time and VmHWM must be > 0", tailString(string(out), 200))
	}
	return r, nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// writeNftScript writes an nft script creating what the nftables mechanism
// creates (table ip cnb_egress, counter dropped, interval set deny, forward
// chain at priority filter - 1, drop rule on iifname dev) with cidrs as the
// set's elements, perLine elements per add-element statement. `nft -f`
// applies the whole file as one transaction.
func writeNftScript(w io.Writer, dev string, cidrs []netip.Prefix, perLine int) error {
	if perLine < 1 {
		return fmt.Errorf("nft script: %d elements per line", perLine)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "table ip cnb_egress {\n\tcounter dropped { }\n\tset deny { type ipv4_addr; flags interval; }\n"+
		"\tchain forward { type filter hook forward priority filter - 1; policy accept; }\n}\n")
	for i := 0; i < len(cidrs); i += perLine {
		bw.WriteString("add element ip cnb_egress deny { ")
		for j, p := range cidrs[i:min(i+perLine, len(cidrs))] {
			if j > 0 {
				bw.WriteString(", ")
			}
			bw.WriteString(p.String())
		}
		bw.WriteString(" }\n")
	}
	fmt.Fprintf(bw, "add rule ip cnb_egress forward iifname %s ip daddr @deny counter name dropped drop\n", strconv.Quote(dev))
	return bw.Flush()
}

// writeIPSetRestore writes the create/add lines the ipset mechanism feeds to
// `ipset restore` (same set name, type and sizes).
func writeIPSetRestore(w io.Writer, name string, hashsize, maxelem int, cidrs []netip.Prefix) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "create %s hash:net family inet hashsize %d maxelem %d\n", name, hashsize, maxelem)
	for _, p := range cidrs {
		bw.WriteString("add " + name + " " + p.String() + "\n")
	}
	return bw.Flush()
}

// finish computes each row's spreads, interval and verdicts. plan is false
// when the run deviates from the plan (then every row is exploratory).
func (r *EgressRow) finish(rounds int, plan bool) {
	r.Kind = KindGoal
	if !plan {
		r.Kind = KindExploratory
	}
	a := make([]*float64, rounds)
	b := make([]*float64, rounds)
	var av, bv []float64
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.Sec == nil || t.Round < 1 || t.Round > rounds {
			continue
		}
		if t.Side == "cnibench" {
			a[t.Round-1] = t.Sec
			av = append(av, *t.Sec)
			r.RSSMax = max(r.RSSMax, t.VmHWM)
		} else {
			b[t.Round-1] = t.Sec
			bv = append(bv, *t.Sec)
			r.PeerRSSMax = max(r.PeerRSSMax, t.VmHWM)
		}
	}
	if s, err := spread(av); err == nil {
		r.Cnibench = &s
	}
	if s, err := spread(bv); err == nil {
		r.PeerSec = &s
	}
	r.Verdict = VerdictInconclusive
	if r.Peer != "" {
		// Speed-up per round: peer time / cnibench time.
		r.Ratios = ratios(b, a)
		if len(r.Ratios) < rounds {
			r.Warnings = append(r.Warnings, fmt.Sprintf("only %d of %d rounds have both sides", len(r.Ratios), rounds))
		}
		if len(r.Ratios) > 0 {
			var warn string
			r.CI, r.Verdict, warn = judge(r.Ratios, r.TargetRatio)
			if warn != "" {
				r.Warnings = append(r.Warnings, warn)
			}
		}
	} else if r.TargetSec > 0 && len(av) > 0 {
		// Headroom per trial: target / time; met when its interval is at
		// or above 1 (every plausible centre of the times is within the
		// target), by the same rule as the ratios.
		head := make([]float64, len(av))
		for i, v := range av {
			head[i] = r.TargetSec / v
		}
		r.Ratios = head
		if len(av) < rounds {
			r.Warnings = append(r.Warnings, fmt.Sprintf("only %d of %d trials succeeded", len(av), rounds))
		}
		var warn string
		r.CI, r.Verdict, warn = judge(head, 1.0)
		if warn != "" {
			r.Warnings = append(r.Warnings, warn)
		}
		if ci := r.CI; ci != nil {
			r.TimeCI = &RatioCI{N: ci.N, Estimate: r.TargetSec / ci.Estimate, Lo: r.TargetSec / ci.Hi, Hi: r.TargetSec / ci.Lo, Confidence: ci.Confidence}
		}
	}
	if r.RSSLimit > 0 {
		switch {
		case r.RSSMax == 0:
			r.RSSVerdict = "no data"
		case r.RSSMax < r.RSSLimit:
			r.RSSVerdict = VerdictMet
		default:
			r.RSSVerdict = VerdictMissed
		}
	}
}

// EgressReport is the JSON of -tests egress-load.
type EgressReport struct {
	Schema      string            `json:"schema"`
	Plan        string            `json:"plan"`
	Command     string            `json:"command"`
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end"`
	Host        Host              `json:"host"`
	Tools       map[string]string `json:"tools"`
	Config      map[string]string `json:"config"`
	Rows        []*EgressRow      `json:"comparisons"`
	Errors      []string          `json:"errors,omitempty"`
	Interrupted bool              `json:"interrupted,omitempty"`
}

func egressPlanHeader(rounds int) string {
	s := fmt.Sprintf("Plan (docs/benchmarks.md, fixed before the run): %d rounds, order alternating, each load in a fresh network namespace, "+
		"the same set Generate(%d, %d, %s) on both sides; %.0f %% interval: %s (here the log-ratios are ln(peer time / cnibench time)). "+
		"Speed-up = peer time / cnibench time; targets: nftables ≥ 2.00 × `nft -f` with loader VmHWM < 200 MiB, ipset ≥ 1.00 × `ipset restore`; "+
		"ebpf-lpm Load (start until attached) < %v with loader VmHWM < 100 MiB (interval of the times: Hodges–Lehmann of ln(target/time)). "+
		"Verdict: **met** if the interval's lower bound ≥ target, **missed** if its upper bound < target, **inconclusive** otherwise.",
		planRounds, egressSeed, egressN, egressMust, 100*planConfidence, intervalMethod, egressEBPFLimit)
	if rounds != planRounds {
		s += fmt.Sprintf("  \n**This run does not follow the plan** (-rounds %d): its verdicts are exploratory.", rounds)
	}
	return s
}

func fmtSec(s *Spread) string {
	if s == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f s (%.3f–%.3f)", s.Median, s.Min, s.Max)
}

func (r *EgressReport) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "## cnibench egress loaders vs bulk loaders, %s\n\n", r.Start.Format("2006-01-02 15:04 MST"))
	h := r.Host
	fmt.Fprintf(w, "Host: %s, %s, kernel %s, %d cores (%s), %.1f GiB.  \n", h.Hostname, h.OS, h.Kernel, h.Cores, h.CPUModel, float64(h.MemBytes)/(1<<30))
	var tools []string
	for _, k := range sortedKeys(r.Tools) {
		tools = append(tools, fmt.Sprintf("%s: %s", k, r.Tools[k]))
	}
	fmt.Fprintf(w, "Tools: %s.  \nCommand: `%s`  \n%s\n\n", strings.Join(tools, "; "), r.Command, r.Plan)
	fmt.Fprintln(w, "| comparison | cnibench load (median, min–max) | peer load | speed-up / headroom: estimate [95 % interval] | target | verdict | cnibench loader VmHWM max | RSS target | peer max RSS |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, c := range r.Rows {
		ci, target := "–", ""
		if c.CI != nil {
			ci = fmt.Sprintf("%.2f× [%.2f, %.2f] (%.1f %%)", c.CI.Estimate, c.CI.Lo, c.CI.Hi, 100*c.CI.Confidence)
		}
		if c.Peer != "" {
			target = fmt.Sprintf("speed-up ≥ %.2f", c.TargetRatio)
		} else {
			target = fmt.Sprintf("load < %.3f s", c.TargetSec)
			if c.TimeCI != nil {
				ci = fmt.Sprintf("time HL %.3f s [%.3f, %.3f] (%.1f %%); headroom %s", c.TimeCI.Estimate, c.TimeCI.Lo, c.TimeCI.Hi, 100*c.TimeCI.Confidence, ci)
			}
		}
		rssT, peerRSS := "–", "–"
		if c.RSSLimit > 0 {
			rssT = fmt.Sprintf("< %s: %s", mib(float64(c.RSSLimit)), fmtVerdict(c.RSSVerdict))
		}
		if c.PeerRSSMax > 0 {
			peerRSS = mib(float64(c.PeerRSSMax))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s (%s) | %s | %s | %s |\n", c.Name, fmtSec(c.Cnibench), fmtSec(c.PeerSec), ci, target,
			fmtVerdict(c.Verdict), c.Kind, mib(float64(c.RSSMax)), rssT, peerRSS)
	}
	fmt.Fprintln(w)
	for _, c := range r.Rows {
		fmt.Fprintf(w, "**%s** — per round (s):", c.Name)
		for _, t := range c.Trials {
			v := "failed"
			if t.Sec != nil {
				v = fmt.Sprintf("%.3f", *t.Sec)
			}
			fmt.Fprintf(w, " r%d %s %s;", t.Round, t.Side, v)
		}
		fmt.Fprintln(w)
		for _, t := range c.Trials {
			if t.Side == "cnibench" && t.Method != "" {
				fmt.Fprintf(w, "  \ncnibench method: %s; VmRSS before Load (set generated) %s", t.Method, mib(float64(t.RSSBefore)))
				if t.ExternalPeakRSS > 0 {
					fmt.Fprintf(w, "; external loader peak RSS %s", mib(float64(t.ExternalPeakRSS)))
				}
				break
			}
		}
		for _, wn := range c.Warnings {
			fmt.Fprintf(w, "  \nwarning: %s", wn)
		}
		fmt.Fprint(w, "\n\n")
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "Error: %s  \n", e)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "**Interrupted**: the figures are partial.")
	}
}
