// Package field renders several results files side by side, one per CNI
// configuration (seed 002's comparison of six CNIs): a graded summary per
// CNI and test, each against its own run's node-to-node baseline, the
// security checks (NetworkPolicy, encryption), the CNI's footprint, MTU
// detection, and the CNIs named in the input that could not be measured.
//
// One cluster runs one CNI, so a field is several runs: each file must
// carry runs labelled with one CNI configuration (labels cni, cni_mode,
// cni_version, and kube_proxy_mode where a run names it), or — a CNI that could not run — no runs and skipped
// entries labelled with cni.
package field

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

// Labels of a run on a cluster that name its CNI.
const (
	LabelCNI        = "cni"
	LabelCNIMode    = "cni_mode"
	LabelCNIVersion = "cni_version"
	// LabelKubeProxyMode is kube-proxy's mode on the cluster (iptables,
	// nftables; none where the CNI replaces it): one CNI with kube-proxy
	// in two modes is two configurations.
	LabelKubeProxyMode = "kube_proxy_mode"
)

// Input is one results file and the name shown for it (its path).
type Input struct {
	Name string
	Set  *result.Set
}

// ID is a CNI configuration: what one entry of the field stands for.
// ProxyMode is kube-proxy's mode where the runs name it.
type ID struct{ CNI, Mode, Version, ProxyMode string }

func idOf(l map[string]string) ID {
	return ID{CNI: l[LabelCNI], Mode: l[LabelCNIMode], Version: l[LabelCNIVersion], ProxyMode: l[LabelKubeProxyMode]}
}

// String is "flannel v0.28.10 (vxlan), kube-proxy iptables": the cni
// check's summary, and kube-proxy's mode where the runs name one.
func (id ID) String() string {
	s := id.CNI
	if id.Version != "" {
		s += " " + id.Version
	}
	if id.Mode != "" {
		s += " (" + id.Mode + ")"
	}
	if pm := id.ProxyMode; pm != "" && pm != "none" && !strings.HasPrefix(pm, "unknown") && !strings.Contains(id.Mode, "kube-proxy") {
		s += ", kube-proxy " + pm
	}
	return s
}

// names reports whether a skipped entry's labels (id) name the
// configuration c: the same CNI, and the same mode and version where the
// skipped entry gives them.
func (id ID) names(c ID) bool {
	return id.CNI == c.CNI && (id.Mode == "" || id.Mode == c.Mode) && (id.Version == "" || id.Version == c.Version) &&
		(id.ProxyMode == "" || id.ProxyMode == c.ProxyMode)
}

func measuredAs(es []*Entry, id ID) bool {
	for _, e := range es {
		if id.names(e.ID) {
			return true
		}
	}
	return false
}

// Entry is one CNI configuration of the field.
type Entry struct {
	ID
	// Name is the entry's short name in the tables: the CNI, and what
	// tells it apart from other entries of the same CNI (shortName).
	Name string
	// File is the results file; Set its document (nil for an entry that
	// was not measured).
	File string
	Set  *result.Set
	// Reasons say why an entry without runs was not measured (its
	// skipped entries' reasons), with the files that say so.
	Reasons []string
	Files   []string
}

// Field is the validated input of a field report.
type Field struct {
	// Measured are the entries with runs, in the order their files were
	// given.
	Measured []*Entry
	// NotMeasured are the CNIs named only by skipped entries, in the
	// order first named.
	NotMeasured []*Entry
	// SkippedCells are cells skipped inside a measured entry's run:
	// "<entry>: <cell>: <reason>".
	SkippedCells []string
	// Files counts the results files read.
	Files int
}

// Error is input a field report refuses: the message is one line naming
// the file(s) and the fix.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func refuse(format string, a ...any) error { return &Error{Msg: fmt.Sprintf(format, a...)} }

// New validates the inputs and builds the field. Every file must hold runs
// of exactly one CNI configuration, or no runs and skipped entries
// labelled with cni; two files of the same configuration are refused
// (their repeats are not pooled: each entry is one run against its own
// baseline).
func New(inputs []Input) (*Field, error) {
	if len(inputs) < 2 {
		return nil, refuse("a field report needs at least two results files, one per CNI; got %d (cnibench report FILE renders one run)", len(inputs))
	}
	f := &Field{Files: len(inputs)}
	byID := map[ID]*Entry{}
	notMeasured := map[ID]*Entry{}
	for _, in := range inputs {
		if in.Set == nil {
			return nil, refuse("%s: no results document", in.Name)
		}
		if len(in.Set.Runs) == 0 {
			n := 0
			for _, s := range in.Set.Skipped {
				if s.Labels[LabelCNI] != "" {
					n++
				}
			}
			if n == 0 {
				return nil, refuse("%s: no runs, and no skipped entry labelled %q: nothing to put in a field report (a CNI that could not run is recorded as a skipped entry labelled cni, docs/results.md)", in.Name, LabelCNI)
			}
		} else {
			id, err := runsID(in)
			if err != nil {
				return nil, err
			}
			if prev, dup := byID[id]; dup {
				return nil, refuse("%s and %s both hold runs of %s: a field report takes one file per CNI configuration (labels cni, cni_mode, cni_version, kube_proxy_mode); report one of them, or compare them with cnibench compare %s %s",
					prev.File, in.Name, id, prev.File, in.Name)
			}
			e := &Entry{ID: id, File: in.Name, Set: in.Set}
			byID[id] = e
			f.Measured = append(f.Measured, e)
		}
		// Skipped entries labelled with a CNI name it: a CNI that could
		// not run at all, or a cell of the run's own CNI.
		for _, s := range in.Set.Skipped {
			if s.Labels[LabelCNI] == "" {
				continue
			}
			id := idOf(s.Labels)
			if len(in.Set.Runs) > 0 && id.names(mustID(in)) {
				f.SkippedCells = append(f.SkippedCells, fmt.Sprintf("%s: %s: %s", id, cellName(s.Labels), s.Reason))
				continue
			}
			e := notMeasured[id]
			if e == nil {
				e = &Entry{ID: id}
				notMeasured[id] = e
				f.NotMeasured = append(f.NotMeasured, e)
			}
			if !contains(e.Reasons, s.Reason) {
				e.Reasons = append(e.Reasons, s.Reason)
			}
			if !contains(e.Files, in.Name) {
				e.Files = append(e.Files, in.Name)
			}
		}
	}
	// A CNI another file measured is not "not measured": its skipped
	// entries are cells that run could not take.
	kept := f.NotMeasured[:0]
	for _, e := range f.NotMeasured {
		if measuredAs(f.Measured, e.ID) {
			for _, r := range e.Reasons {
				f.SkippedCells = append(f.SkippedCells, fmt.Sprintf("%s: %s (named in %s)", e.ID, r, strings.Join(e.Files, ", ")))
			}
			continue
		}
		kept = append(kept, e)
	}
	f.NotMeasured = kept
	if len(f.Measured) == 0 {
		return nil, refuse("none of the %d files holds runs: nothing to grade (only CNIs that could not be measured)", len(inputs))
	}
	nameEntries(append(append([]*Entry(nil), f.Measured...), f.NotMeasured...))
	return f, nil
}

// runsID is the one CNI configuration of the file's runs.
func runsID(in Input) (ID, error) {
	missing := 0
	ids := map[ID]bool{}
	var order []ID
	for _, r := range in.Set.Runs {
		if r.Labels[LabelCNI] == "" {
			missing++
			continue
		}
		id := idOf(r.Labels)
		if !ids[id] {
			ids[id] = true
			order = append(order, id)
		}
	}
	if missing > 0 {
		return ID{}, refuse("%s: %d of its %d runs carry no %q label: a field report compares runs labelled by CNI (cnibench suite --backend kubernetes), one file per CNI; cnibench report %s renders one run",
			in.Name, missing, len(in.Set.Runs), LabelCNI, in.Name)
	}
	if len(order) > 1 {
		var names []string
		for _, id := range order {
			names = append(names, id.String())
		}
		return ID{}, refuse("%s: its runs carry %d CNI configurations (%s): a field report takes one per file, as one cluster runs one CNI",
			in.Name, len(order), strings.Join(names, "; "))
	}
	return order[0], nil
}

// mustID is runsID for a file already validated.
func mustID(in Input) ID {
	id, _ := runsID(in)
	return id
}

// nameEntries gives every entry a short name: the CNI alone when no other
// entry has it; otherwise the CNI and the parts of its mode (comma-
// separated) that not every entry of that CNI shares ("cilium eBPF host
// routing"), then its version if that is what differs; the full
// configuration as a last resort. Names are unique.
func nameEntries(es []*Entry) {
	byCNI := map[string][]*Entry{}
	for _, e := range es {
		byCNI[e.CNI] = append(byCNI[e.CNI], e)
	}
	for _, group := range byCNI {
		if len(group) == 1 {
			group[0].Name = group[0].CNI
			continue
		}
		common := map[string]int{}
		versions := map[string]bool{}
		for _, e := range group {
			seen := map[string]bool{}
			for _, p := range modeParts(e.Mode) {
				if !seen[p] {
					seen[p] = true
					common[p]++
				}
			}
			versions[e.Version] = true
		}
		for _, e := range group {
			var parts []string
			for _, p := range modeParts(e.Mode) {
				if common[p] < len(group) {
					parts = append(parts, p)
				}
			}
			name := strings.TrimSpace(e.CNI + " " + strings.Join(parts, ", "))
			if len(versions) > 1 && e.Version != "" {
				name += " " + e.Version
			}
			e.Name = name
		}
	}
	// Names that collide and differ in kube-proxy's mode say it
	// ("bridge, kube-proxy nftables"); whatever still collides is named in
	// full.
	count := map[string]int{}
	for _, e := range es {
		count[e.Name]++
	}
	for _, e := range es {
		if count[e.Name] > 1 && e.ProxyMode != "" {
			e.Name += ", kube-proxy " + e.ProxyMode
		}
	}
	clear(count)
	for _, e := range es {
		count[e.Name]++
	}
	for _, e := range es {
		if count[e.Name] > 1 || e.Name == "" {
			e.Name = e.ID.String()
		}
	}
}

func modeParts(mode string) []string {
	var out []string
	for _, p := range strings.Split(mode, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// cellName renders a skipped entry's labels other than the CNI's.
func cellName(l map[string]string) string {
	var keys []string
	for k := range l {
		if k != LabelCNI && k != LabelCNIMode && k != LabelCNIVersion {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	if len(parts) == 0 {
		return "the whole run"
	}
	return strings.Join(parts, " ")
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
