package result

import (
	"errors"
	"fmt"
	"slices"
)

// Merge pools several results documents of one side of a comparison
// (e.g. rounds of a CI gate that alternated OLD and NEW): the repeats of
// runs with identical labels are put together, renumbered, and summarised
// again, so that the interval and the test see the variation between the
// documents as well as within them. Runs only some documents have are kept.
// Tool, host and config come from the first document; the start is the
// earliest and the end the latest; warnings and skips are joined. A
// document whose host (CPU model, cores, kernel) differs from the first's
// is an error: pooling runs of different machines would hide the
// difference.
func Merge(sets ...*Set) (*Set, error) {
	if len(sets) == 0 {
		return nil, errors.New("merge: no documents")
	}
	if len(sets) == 1 {
		return sets[0], nil
	}
	first := sets[0]
	out := &Set{Schema: SchemaResults, Tool: first.Tool, Start: first.Start, End: first.End, Host: first.Host,
		Config: first.Config, Datapaths: first.Datapaths, Shape: first.Shape}
	index := map[string]int{}
	for i, s := range sets {
		if h := s.Host; h.CPUModel != first.Host.CPUModel || h.Cores != first.Host.Cores || h.Kernel != first.Host.Kernel {
			return nil, fmt.Errorf("merge: document %d ran on another machine (%s, %d cores, kernel %s) than the first (%s, %d cores, kernel %s); compare them instead of pooling them",
				i+1, h.CPUModel, h.Cores, h.Kernel, first.Host.CPUModel, first.Host.Cores, first.Host.Kernel)
		}
		if s.Start.Before(out.Start) {
			out.Start = s.Start
		}
		if s.End.After(out.End) {
			out.End = s.End
		}
		out.Interrupted = out.Interrupted || s.Interrupted
		out.Warnings = append(out.Warnings, s.Warnings...)
		out.Skipped = append(out.Skipped, s.Skipped...)
		for _, r := range s.Runs {
			k := LabelKey(r.Labels)
			j, ok := index[k]
			if !ok {
				index[k] = len(out.Runs)
				r.Repeats = slices.Clone(r.Repeats)
				r.Warnings = slices.Clone(r.Warnings)
				out.Runs = append(out.Runs, r)
				continue
			}
			m := &out.Runs[j]
			m.Repeats = append(m.Repeats, r.Repeats...)
			m.Warnings = append(m.Warnings, r.Warnings...)
			m.Interrupted = m.Interrupted || r.Interrupted
		}
	}
	for i := range out.Runs {
		r := &out.Runs[i]
		for j := range r.Repeats {
			r.Repeats[j].Index = j
		}
		if len(r.Repeats) > 0 {
			r.Summary = SummarizeRepeats(r.Repeats)
		}
	}
	return out, nil
}
