package suite

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// A scenario that escalates (scenario.Escalation: a deny set from 10 to
// 1 000 000 CIDRs on a cluster) has its series' points run in ascending
// size within each repeat, and a failure at one size stops the series:
// its larger points are recorded "not run: …" instead of being attempted
// (they would fail the same way and could take the cluster down). The
// failed point itself is tried again in the next repeats, as any failed
// point is: how often it fails is part of the result.

// escPoint is a point's place in an escalating series.
type escPoint struct {
	series string // datapath and the scenario's series
	size   int
}

// markEscalation gives every point of an escalating scenario its series
// and size (nothing for other scenarios, or points the scenario does not
// escalate).
func markEscalation(sc scenario.Scenario, points []*point) {
	esc, ok := sc.(scenario.Escalation)
	if !ok {
		return
	}
	for _, pt := range points {
		if series, size, ok := esc.Escalates(pt.sp); ok {
			pt.esc = &escPoint{series: pt.datapath + "\x00" + series, size: size}
		}
	}
}

// ascending reorders one repeat's steps so that the points of each
// escalating series come in ascending size, in the positions the shuffle
// gave that series: the series stay interleaved at random, and steps of
// points that do not escalate keep their places.
func ascending(steps []step, points []*point) {
	pos := map[string][]int{}
	var order []string
	for i, s := range steps {
		e := points[s.point].esc
		if e == nil {
			continue
		}
		if _, seen := pos[e.series]; !seen {
			order = append(order, e.series)
		}
		pos[e.series] = append(pos[e.series], i)
	}
	for _, series := range order {
		idx := pos[series]
		sub := make([]step, len(idx))
		for j, i := range idx {
			sub[j] = steps[i]
		}
		slices.SortStableFunc(sub, func(a, b step) int { return cmp.Compare(points[a.point].esc.size, points[b.point].esc.size) })
		for j, i := range idx {
			steps[i] = sub[j]
		}
	}
}

// pointFailed handles a point whose Prepare failed with err (recorded by
// the caller as failed or not enforced): a scenario.PointFailure's
// evidence becomes a finding, and the larger points of an escalating
// series are not run.
func (st *state) pointFailed(pt *point, points []*point, rep int, err error, verdict string) {
	var pf *scenario.PointFailure
	if errors.As(err, &pf) {
		labels := pointLabels(pt)
		labels["repeat"] = strconv.Itoa(rep + 1)
		f := result.Finding{Check: scenario.FailureCheck, Verdict: verdict,
			Summary:  pointString(pt.sp) + " (repeat " + strconv.Itoa(rep+1) + "): " + shorten(firstLine(err.Error()), 400),
			Evidence: slices.Clone(pf.Evidence), Metrics: maps.Clone(pf.Metrics), Labels: labels}
		st.mu.Lock()
		st.set.Findings = append(st.set.Findings, f)
		st.mu.Unlock()
		if err := st.flush(); err != nil {
			st.log.Error("write results", "err", err)
		}
	}
	if pt.esc == nil {
		return
	}
	reason := fmt.Sprintf("not run: %s failed at a smaller size (%s, repeat %d: %s)", seriesName(pt.esc.series), pointString(pt.sp), rep+1,
		shorten(firstLine(err.Error()), 300))
	for _, q := range points {
		if q.esc == nil || q.esc.series != pt.esc.series || q.esc.size <= pt.esc.size || q.skipped {
			continue
		}
		if q.attempts == 0 {
			st.skipPoint(q, reason)
			continue
		}
		// Measured in earlier repeats: those stay; its later repeats are
		// not run.
		q.skipped = true
		st.mu.Lock()
		st.total -= len(q.cells) * max(st.o.Repeat-q.attempts, 0)
		st.mu.Unlock()
		st.warnOnce(fmt.Sprintf("%s on %s: repeats after %d %s", pointString(q.sp), q.datapath, q.attempts, reason))
	}
}

// seriesName is an escalating series' name as the scenario gave it.
func seriesName(key string) string {
	for i := range len(key) {
		if key[i] == 0 {
			return key[i+1:]
		}
	}
	return key
}

// shorten cuts s to at most n bytes (at a rune boundary), marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
