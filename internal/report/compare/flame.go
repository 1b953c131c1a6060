package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/report/flame"
	"github.com/cnibench/cnibench/pkg/result"
)

// Flamegraph is one differential flamegraph written by WriteFlamegraphs.
type Flamegraph struct {
	// Path is the SVG file written; Labels the compared cell's.
	Path   string
	Labels map[string]string
	// Old and New name the compared files.
	Old, New string
}

// flameMinFraction keeps a differential graph small (frames under 0.1 % of
// the samples are merged).
const flameMinFraction = 0.001

// WriteFlamegraphs writes, for every cell of OLD (inputs[0]) matched in a
// NEW file (the same labels, or the same Match labels, as Compare matches
// them) where both runs have a CPU profile, a differential flamegraph
// OLD → NEW to dir/<cell>.svg (dir/<cell>.<n>.svg for the n-th NEW file
// when there are several). Profiles are read relative to each results
// file's directory. A profile that cannot be read or drawn is a note, not
// an error; failing to write into dir is an error.
func WriteFlamegraphs(inputs []Input, o Options, dir string) (written []Flamegraph, notes []string, err error) {
	if o.Mode != "" && o.Mode != ByFile {
		return writeFlamegraphsBy(inputs, o, dir)
	}
	if len(inputs) < 2 {
		return nil, nil, &UsageError{"--flamegraph: compare at least two files (OLD NEW)"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("--flamegraph %s: %w", dir, err)
	}
	old := inputs[0]
	oldIdx := map[string]*result.Run{}
	for i := range old.Set.Runs {
		r := &old.Set.Runs[i]
		if k := result.LabelKey(project(r.Labels, o.Match)); oldIdx[k] == nil {
			oldIdx[k] = r
		}
	}
	used := map[string]bool{}
	for n, in := range inputs[1:] {
		for i := range in.Set.Runs {
			nr := &in.Set.Runs[i]
			or := oldIdx[result.LabelKey(project(nr.Labels, o.Match))]
			if len(inputs) == 2 && len(old.Set.Runs) == 1 && len(in.Set.Runs) == 1 {
				or = &old.Set.Runs[0] // two `cnibench run` results: compared whatever their labels
			}
			if or == nil || or.Profile == nil || nr.Profile == nil {
				continue
			}
			cell := report.CellName(nr.Labels)
			bp, err := report.ReadProfile(filepath.Dir(old.Name), or.Profile.File)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: %s: %v", cell, old.Name, err))
				continue
			}
			np, err := report.ReadProfile(filepath.Dir(in.Name), nr.Profile.File)
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: %s: %v", cell, in.Name, err))
				continue
			}
			var buf bytes.Buffer
			err = flame.DiffSVG(&buf, bp, np, flame.Options{
				Title:       "Differential flamegraph — " + cell,
				Subtitle:    old.Name + " → " + in.Name,
				BaseLabel:   old.Name + " (OLD)",
				OtherLabel:  in.Name + " (NEW)",
				MinFraction: flameMinFraction,
			})
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s: %v", cell, err))
				continue
			}
			name := cellSlug(nr.Labels)
			if len(inputs) > 2 {
				name += fmt.Sprintf(".%d", n+1)
			}
			path, err := writeUnique(dir, name, used, buf.Bytes())
			if err != nil {
				return written, notes, err
			}
			written = append(written, Flamegraph{Path: path, Labels: nr.Labels, Old: old.Name, New: in.Name})
		}
	}
	return written, notes, nil
}

// writeFlamegraphsBy is WriteFlamegraphs for --by LABEL in one results
// file: each profiled run whose LABEL is not the baseline against the
// baseline's run matched as Compare matches them (dir/<cell>.svg, the
// baseline's value first in the name: "<baseline>-vs-<cell>").
func writeFlamegraphsBy(inputs []Input, o Options, dir string) (written []Flamegraph, notes []string, err error) {
	by := string(o.Mode)
	if len(inputs) != 1 || strings.Contains(by, ",") {
		return nil, nil, &UsageError{"--flamegraph with --by: one results file and one label"}
	}
	base := o.Baseline
	if base == "" {
		if o.Mode != ByDatapath {
			return nil, nil, &UsageError{"--flamegraph with --by " + by + ": name the reference with --baseline"}
		}
		base = report.BaselineDatapath
	}
	in := inputs[0]
	var baseRuns []*result.Run
	for i := range in.Set.Runs {
		if in.Set.Runs[i].Labels[by] == base {
			baseRuns = append(baseRuns, &in.Set.Runs[i])
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("--flamegraph %s: %w", dir, err)
	}
	resDir := filepath.Dir(in.Name)
	used := map[string]bool{}
	for i := range in.Set.Runs {
		nr := &in.Set.Runs[i]
		v, ok := nr.Labels[by]
		if !ok || v == base || nr.Profile == nil {
			continue
		}
		or := matchBaseline(baseRuns, nr.Labels, []string{by}, nil)
		if or == nil || or.Profile == nil {
			continue
		}
		cell := report.CellName(nr.Labels)
		svg, err := diffRuns(resDir, or, nr, flame.Options{
			Title:       "Differential flamegraph — " + v + " vs " + base,
			Subtitle:    cell,
			BaseLabel:   base,
			OtherLabel:  v,
			MinFraction: flameMinFraction,
		})
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", cell, err))
			continue
		}
		path, err := writeUnique(dir, base+"-vs-"+cellSlug(nr.Labels), used, svg)
		if err != nil {
			return written, notes, err
		}
		written = append(written, Flamegraph{Path: path, Labels: nr.Labels, Old: base, New: v})
	}
	return written, notes, nil
}

// diffRuns draws the differential flamegraph of two runs' profiles, read
// relative to dir.
func diffRuns(dir string, base, other *result.Run, o flame.Options) ([]byte, error) {
	bp, err := report.ReadProfile(dir, base.Profile.File)
	if err != nil {
		return nil, err
	}
	op, err := report.ReadProfile(dir, other.Profile.File)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := flame.DiffSVG(&buf, bp, op, o); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeUnique writes svg to dir/<name>.svg, the name made unique among
// those used (name-2, name-3, …), and returns the path.
func writeUnique(dir, name string, used map[string]bool, svg []byte) (string, error) {
	for base, k := name, 2; used[name]; k++ {
		name = fmt.Sprintf("%s-%d", base, k)
	}
	used[name] = true
	path := filepath.Join(dir, name+".svg")
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		return "", fmt.Errorf("--flamegraph: %w", err)
	}
	return path, nil
}

// cellSlug names a cell's file: its label values in display order,
// joined by '.', each limited to letters, digits, '-' and '_'.
func cellSlug(l map[string]string) string {
	ks := make([]string, 0, len(l))
	for k := range l {
		ks = append(ks, k)
	}
	report.SortLabelKeys(ks)
	var parts []string
	for _, k := range ks {
		v := l[k]
		if k == report.LabelCPUProfile {
			continue
		}
		parts = append(parts, strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			}
			return '_'
		}, v))
	}
	if len(parts) == 0 {
		return "cell"
	}
	return strings.Join(parts, ".")
}
