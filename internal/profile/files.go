package profile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
	"github.com/google/pprof/profile"
)

// DefaultHz is DefaultFrequency under the name the CLI uses.
const DefaultHz = DefaultFrequency

// Per-repeat metric names of a profiled run besides the family shares
// (Shares.Metrics).
const (
	SamplesMetric = "cpu_profile_samples"
	LostMetric    = "cpu_profile_lost"
	// ReaderCPUMetric is the reader thread's CPU time in a window (s).
	ReaderCPUMetric = "cpu_profile_reader_cpu_sec"
)

// topFuncs is how many functions a result.Profile's Top lists.
const topFuncs = 20

// metaPrefix starts the pprof comment that carries what the pprof format
// has no field for.
const metaPrefix = "cnibench-profile:"

// meta renders the header comment of a profile.
func (p *Profile) meta() string {
	return fmt.Sprintf("%s hz=%d cpus=%d windows=%d lost=%d (system-wide cpu-clock samples, docs/profiles.md)",
		metaPrefix, p.Frequency, p.CPUs, p.Windows, p.Lost)
}

// setMeta puts the header comment in P, replacing an older one.
func (p *Profile) setMeta() {
	cs := []string{p.meta()}
	for _, c := range p.P.Comments {
		if !strings.HasPrefix(c, metaPrefix) {
			cs = append(cs, c)
		}
	}
	p.P.Comments = cs
}

// Metrics returns the shares as per-repeat metrics in percent:
// cpu_share_<family> (exclusive) and cpu_incl_<family> (inclusive).
func (s Shares) Metrics() map[string]float64 {
	m := make(map[string]float64, 2*len(Families))
	for _, f := range Families {
		m[result.CPUSharePrefix+f.Name] = 100 * s.Exclusive[f.Name]
		m[result.CPUInclPrefix+f.Name] = 100 * s.Inclusive[f.Name]
	}
	return m
}

// ReadFile reads a profile written by Profile.Write, recovering its header
// from the profile's comment.
func ReadFile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read profile: %w", err)
	}
	defer f.Close()
	pp, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("read profile %s: %w", path, err)
	}
	p := &Profile{P: pp, Window: time.Duration(pp.DurationNanos)}
	for _, s := range pp.Sample {
		if len(s.Value) > 0 {
			p.Samples += int(s.Value[0])
		}
	}
	for _, c := range pp.Comments {
		if rest, ok := strings.CutPrefix(c, metaPrefix); ok {
			fmt.Sscanf(rest, " hz=%d cpus=%d windows=%d lost=%d", &p.Frequency, &p.CPUs, &p.Windows, &p.Lost)
		}
	}
	if p.Frequency == 0 && pp.Period > 0 {
		p.Frequency = int((int64(time.Second) + pp.Period/2) / pp.Period)
	}
	return p, nil
}

// MergeFiles merges profile files into out (created or replaced) and
// summarises the merge for results.json (File is left for the caller).
func MergeFiles(out string, files ...string) (*result.Profile, error) {
	if len(files) == 0 {
		return nil, errors.New("merge profiles: no files")
	}
	var ps []*Profile
	for _, name := range files {
		p, err := ReadFile(name)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	m, err := Merge(ps...)
	if err != nil {
		return nil, err
	}
	if err := m.WriteFile(out); err != nil {
		return nil, fmt.Errorf("merge profiles: %w", err)
	}
	return m.Summary(), nil
}

// WriteFile writes p (Write) to path, creating its directory, through a
// temporary file renamed into place: a reader never sees half a profile.
func (p *Profile) WriteFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	err = p.Write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Summary summarises the profile for results.json: counts, the top
// functions by own samples and the BPF programs' shares (%).
func (p *Profile) Summary() *result.Profile {
	s := &result.Profile{Samples: int64(p.Samples), Windows: p.Windows, Seconds: p.Window.Seconds(), Hz: p.Frequency, CPUs: p.CPUs}
	if p.P == nil {
		return s
	}
	sh := Breakdown(p.P)
	if len(sh.BPF) > 0 {
		s.BPF = map[string]float64{}
		for k, v := range sh.BPF {
			s.BPF[k] = 100 * v
		}
	}
	s.Top = top(p.P, topFuncs)
	return s
}

// top lists the n functions with the most samples of their own (comm
// root frames left out).
func top(p *profile.Profile, n int) []result.ProfileFunc {
	self, total := map[string]int64{}, map[string]int64{}
	kernel, engineFn := map[string]bool{}, map[string]bool{}
	var all int64
	seen := map[string]bool{}
	for _, s := range p.Sample {
		if len(s.Value) == 0 || s.Value[0] <= 0 {
			continue
		}
		w := s.Value[0]
		all += w
		clear(seen)
		engine := len(s.Label["comm"]) > 0 && slices.Contains(engineComms(), s.Label["comm"][0])
		leaf := true
		for _, l := range s.Location {
			if _, ok := isComm(l); ok || isNodeRoot(l) {
				continue
			}
			name := locName(l)
			kernel[name] = isKernelLoc(l)
			if engine && !kernel[name] {
				engineFn[name] = true
			}
			if leaf {
				self[name] += w
				leaf = false
			}
			if !seen[name] {
				seen[name] = true
				total[name] += w
			}
		}
	}
	if all == 0 {
		return nil
	}
	var out []result.ProfileFunc
	for name, v := range self {
		fam := FamilyOtherProcs
		if engineFn[name] {
			fam = FamilyEngine
		}
		if kernel[name] {
			if fam = KernelFamily(name); fam == "" {
				fam = FamilyKernelOther
			}
		}
		out = append(out, result.ProfileFunc{Name: name, Family: fam,
			SelfPct: 100 * float64(v) / float64(all), TotalPct: 100 * float64(total[name]) / float64(all)})
	}
	slices.SortFunc(out, func(a, b result.ProfileFunc) int {
		return cmp.Or(cmp.Compare(b.SelfPct, a.SelfPct), cmp.Compare(a.Name, b.Name))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
