package profile

import (
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
)

// Shares is the CPU breakdown of a profile by family (Families' names).
type Shares struct {
	// Samples is the number of samples classified.
	Samples int64 `json:"samples"`
	// Exclusive is each family's fraction (0..1) of the samples, each
	// sample counted once (see Breakdown); they sum to 1 when Samples > 0.
	// Every family has a key.
	Exclusive map[string]float64 `json:"exclusive"`
	// Inclusive is each family's fraction of the samples with a frame of
	// the family anywhere in the stack.
	Inclusive map[string]float64 `json:"inclusive"`
	// BPF is each BPF program's inclusive fraction, by program name
	// (bpf_prog:<name> without the prefix).
	BPF map[string]float64 `json:"bpf,omitempty"`
}

// Breakdown classifies the samples of p (a profile of this package, or a
// merge of them) with the engine being processes named EngineComm or
// named as this process is (a renamed binary, say cnibench-v2, runs the
// lab's clients and servers under its own name).
func Breakdown(p *profile.Profile) Shares { return BreakdownFor(p, engineComms()...) }

// engineComms are EngineComm and this process's comm.
var engineComms = sync.OnceValue(func() []string {
	out := []string{EngineComm}
	if b, err := os.ReadFile("/proc/self/comm"); err == nil {
		if c := strings.TrimSpace(string(b)); c != "" && c != EngineComm {
			out = append(out, c)
		}
	}
	return out
})

// BreakdownFor is Breakdown with the engine's process names given.
//
// A sample is walked from its leaf toward its root. If the leaf is in the
// kernel, the sample's exclusive family is that of the first kernel frame
// matching a family (Family.Match, in Families order; frames matching none,
// such as locks, memcpy or interrupt entry, are passed over), and
// kernel_other if none does: time spent in the kernel is never charged to
// the process's user-space code. If the leaf is in user space, the sample
// is engine when its comm is one of engineComms.
//
// Sampling is system-wide, so a busy host's other processes (a build, a
// control plane) are in the profile too: a sample of a process other than
// the engine that has user-space frames (idle and kernel threads have
// none) is other_procs, user and kernel time alike — unless it was taken
// in a softirq that interrupted it (a frame such as handle_softirqs or
// net_rx_action on its stack): that network work is the datapath's, and
// is classified by its frames leafward of the softirq's entry as above.
// Inclusive counts a sample once for every family with a frame in it
// (engine: any user-space frame; kernel_other and other_procs: as
// exclusive; an other process's softirq sample: the frames leafward of
// the softirq's entry only).
func BreakdownFor(p *profile.Profile, engineComms ...string) Shares {
	sh := Shares{Exclusive: map[string]float64{}, Inclusive: map[string]float64{}, BPF: map[string]float64{}}
	for _, f := range Families {
		sh.Exclusive[f.Name] = 0
		sh.Inclusive[f.Name] = 0
	}
	if p == nil {
		return sh
	}
	vi := 0
	for i, st := range p.SampleType {
		if st.Type == "samples" {
			vi = i
		}
	}
	excl := map[string]int64{}
	incl := map[string]int64{}
	bpf := map[string]int64{}
	famOf := map[uint64]string{} // location ID → kernel family, memoised
	var total int64
	seen := map[string]bool{}
	for _, s := range p.Sample {
		if vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		w := s.Value[vi]
		total += w
		comm := ""
		if c := s.Label["comm"]; len(c) > 0 {
			comm = c[0]
		}
		clear(seen)
		exclusive := ""
		leaf := true
		leafKernel := false
		var soft map[string]bool // seen, leafward of a softirq's entry
		softExcl := ""
		for _, l := range s.Location {
			if c, ok := isComm(l); ok {
				if comm == "" {
					comm = c
				}
				continue
			}
			if isNodeRoot(l) {
				continue
			}
			if isKernelLoc(l) {
				fam, ok := famOf[l.ID]
				if !ok {
					fam = KernelFamily(locName(l))
					famOf[l.ID] = fam
				}
				if leaf {
					leafKernel = true
				}
				if fam != "" {
					seen[fam] = true
					if leafKernel && exclusive == "" {
						exclusive = fam
					}
				}
				if fam == FamilyBPF {
					if name, ok := strings.CutPrefix(locName(l), BPFPrefix); ok {
						seen[BPFPrefix+name] = true
					}
				}
				if soft == nil && isSoftirqEntry(locName(l)) {
					soft = maps.Clone(seen)
					softExcl = exclusive
				}
			} else {
				seen["user"] = true
			}
			leaf = false
		}
		userFam := FamilyEngine
		if !slices.Contains(engineComms, comm) && seen["user"] {
			// Another process: only a softirq's network work interrupting
			// it is classified by its frames.
			userFam = FamilyOtherProcs
			if soft != nil && leafKernel {
				seen, exclusive = soft, softExcl
				if exclusive == "" {
					exclusive = FamilyKernelOther
				}
			} else {
				clear(seen)
				exclusive = FamilyOtherProcs
			}
		}
		switch {
		case leafKernel && exclusive == "":
			exclusive = FamilyKernelOther
		case !leafKernel && seen["user"]:
			exclusive = userFam
		case exclusive == "":
			exclusive = FamilyKernelOther // an empty stack
		}
		excl[exclusive] += w
		if exclusive == FamilyKernelOther || exclusive == FamilyOtherProcs {
			incl[exclusive] += w
		}
		for k := range seen {
			switch {
			case k == "user":
				incl[userFam] += w
			case strings.HasPrefix(k, BPFPrefix):
				bpf[strings.TrimPrefix(k, BPFPrefix)] += w
			default:
				incl[k] += w
			}
		}
	}
	sh.Samples = total
	if total == 0 {
		return sh
	}
	for k, v := range excl {
		sh.Exclusive[k] = float64(v) / float64(total)
	}
	for k, v := range incl {
		sh.Inclusive[k] = float64(v) / float64(total)
	}
	for k, v := range bpf {
		sh.BPF[k] = float64(v) / float64(total)
	}
	return sh
}

// Delta returns each family's exclusive share in s minus base's, in
// percentage points.
func (s Shares) Delta(base Shares) map[string]float64 {
	d := make(map[string]float64, len(Families))
	for _, f := range Families {
		d[f.Name] = 100 * (s.Exclusive[f.Name] - base.Exclusive[f.Name])
	}
	return d
}

// isKernelLoc reports whether a location is in the kernel mapping.
func isKernelLoc(l *profile.Location) bool {
	return l.Mapping != nil && l.Mapping.File == KernelMapping
}

// locName is the (outermost) function name of a location.
func locName(l *profile.Location) string {
	if len(l.Line) == 0 || l.Line[0].Function == nil {
		return ""
	}
	return l.Line[len(l.Line)-1].Function.Name
}

// softirqEntries are the frames where a softirq's work starts: whatever is
// leafward of them was done in softirq context, on behalf of the network,
// whichever task it interrupted.
var softirqEntries = []string{"handle_softirqs", "__do_softirq", "do_softirq", "net_rx_action", "net_tx_action", "run_ksoftirqd"}

func isSoftirqEntry(name string) bool { return slices.Contains(softirqEntries, stripSuffix(name)) }
