package suite

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
)

// ProfiledLabel is the label of a CPU-profiled cell ("on"): sampling costs
// CPU, so a profiled cell is never compared with an unprofiled one (their
// labels differ).
const ProfiledLabel = "cpu_profile"

// ProfileDir is where the profiles go, under the run's output directory:
// one gzipped pprof file per profiled cell (all its windows merged).
const ProfileDir = "profiles"

// CPUProfile selects the cells whose measured windows are CPU-profiled
// (--cpu-profile) and how.
type CPUProfile struct {
	// Match: a cell is profiled when its labels include every key=value
	// of one of the matchers; empty: every cell.
	Match []map[string]string
	// Hz is the sampling rate per CPU; 0: profile.DefaultHz.
	Hz int
}

func (p *CPUProfile) hz() int {
	if p == nil || p.Hz <= 0 {
		return profile.DefaultHz
	}
	return p.Hz
}

// matches tells whether p selects a cell with labels l.
func (p *CPUProfile) matches(l map[string]string) bool {
	if len(p.Match) == 0 {
		return true
	}
	return slices.ContainsFunc(p.Match, func(m map[string]string) bool {
		for k, v := range m {
			if l[k] != v {
				return false
			}
		}
		return true
	})
}

var labelName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ParseCPUProfile parses --cpu-profile's value: "all" (or empty) for every
// cell, else matchers separated by ';', each a comma-separated list of
// label=value that a cell's labels must all have, e.g.
// "datapath=veth-routing,test=tcp_rr;datapath=ebpf-host-routing".
func ParseCPUProfile(spec string, hz int) (*CPUProfile, error) {
	if hz < 0 || hz > 10000 {
		return nil, fmt.Errorf("--cpu-profile-hz %d: give 1..10000 samples per second per CPU (default %d)", hz, profile.DefaultHz)
	}
	p := &CPUProfile{Hz: hz}
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return p, nil
	}
	for _, one := range strings.Split(spec, ";") {
		m := map[string]string{}
		for _, kv := range strings.Split(one, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || !labelName.MatchString(k) || v == "" {
				return nil, fmt.Errorf("--cpu-profile %q: %q is not label=value; give cells as label=value[,label=value…][;…] (e.g. datapath=veth-routing,test=tcp_rr) or all", spec, kv)
			}
			m[k] = v
		}
		p.Match = append(p.Match, m)
	}
	return p, nil
}

// markProfiled marks the cells --cpu-profile selects on deployments that
// can profile; the others are noted once, with the reason.
func (st *state) markProfiled(points []*point) {
	p := st.o.CPUProfile
	if p == nil {
		return
	}
	why := map[*depRun]error{}
	n, asked := 0, 0
	for _, pt := range points {
		for i := range pt.cells {
			c := &pt.cells[i]
			if !p.matches(c.labels()) {
				continue
			}
			asked++
			err, seen := why[c.dep]
			if !seen {
				if pr, ok := c.dep.d.(backend.CPUProfiler); ok {
					err = pr.CanProfile()
				} else {
					err = fmt.Errorf("the %s backend cannot profile its clients' CPUs: %w", st.backend.Name(), backend.ErrNotSupported)
				}
				why[c.dep] = err
			}
			if err == nil {
				c.profiled = true
				n++
			}
		}
	}
	for _, err := range why {
		if err != nil {
			st.warnOnce("--cpu-profile: skipped: " + err.Error())
		}
	}
	if n > 0 {
		if err := os.MkdirAll(filepath.Join(st.o.OutDir, ProfileDir, "repeats"), 0o755); err != nil {
			st.warnOnce("--cpu-profile: skipped: " + err.Error())
			for _, pt := range points {
				for i := range pt.cells {
					pt.cells[i].profiled = false
				}
			}
			return
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.set.Config["cpu_profile_hz"] = fmt.Sprint(p.hz())
	st.set.Config["cpu_profile_cells"] = fmt.Sprintf("%d of %d selected", n, asked)
	if asked == 0 {
		st.set.Warnings = append(st.set.Warnings, "--cpu-profile: no cell matched; the labels are datapath, path, test, flows, mtu and the scenario's")
	}
}

// cellSlug names a cell's profile files: readable, and unique by a hash of
// all its labels.
func cellSlug(l map[string]string) string {
	h := fnv.New32a()
	h.Write([]byte(result.LabelKey(l)))
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, strings.ToLower(s))
	}
	return fmt.Sprintf("%s.%s.%s.%sf.%08x", clean(l["datapath"]), clean(l["path"]), clean(l["test"]), clean(l["flows"]), h.Sum32())
}

// profileFile is where a profiled cell's repeat writes its profile.
func (st *state) profileFile(c cell, rep int) string {
	return filepath.Join(st.o.OutDir, ProfileDir, "repeats", fmt.Sprintf("%s.r%d.pb.gz", cellSlug(c.labels()), rep))
}

// profiledRepeat notes a profiled repeat's file for its cell, and adds the
// CPU breakdown to the repeat when the client did not (a backend that
// profiles beside the client).
func (st *state) profiledRepeat(c cell, res *result.Result, file string) {
	if _, err := os.Stat(file); err != nil {
		res.Warnings = append(res.Warnings, "cpu profile: none was written for a repeat (no window measured, or the sampler failed: see the log)")
		return
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics != nil {
		m := res.Repeats[0].Metrics
		if _, ok := m[profile.SamplesMetric]; !ok {
			p, err := profile.ReadFile(file)
			if err != nil {
				res.Warnings = append(res.Warnings, "cpu profile: "+err.Error())
			} else {
				for k, v := range profile.Breakdown(p.P).Metrics() {
					m[k] = v
				}
				m[profile.SamplesMetric] = float64(p.Samples)
			}
		}
	}
	key := result.LabelKey(c.labels())
	st.mu.Lock()
	if st.profiles == nil {
		st.profiles = map[string][]string{}
	}
	st.profiles[key] = append(st.profiles[key], file)
	st.mu.Unlock()
}

// finishProfiles merges each profiled cell's repeats into one file next to
// results.json and summarises it in the cell's run (also after an
// interruption: what was measured is kept).
func (st *state) finishProfiles(points []*point) {
	if len(st.profiles) == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, pt := range points {
		for _, c := range pt.cells {
			key := result.LabelKey(c.labels())
			files := st.profiles[key]
			run := st.runs[key]
			if len(files) == 0 || run == nil {
				continue
			}
			rel := filepath.Join(ProfileDir, cellSlug(c.labels())+".pb.gz")
			sum, err := profile.MergeFiles(filepath.Join(st.o.OutDir, rel), files...)
			if err != nil {
				run.Warnings = append(run.Warnings, "cpu profile: "+err.Error())
				continue
			}
			sum.File = rel
			run.Profile = sum
			for _, f := range files {
				_ = os.Remove(f)
			}
			delete(st.profiles, key)
		}
	}
	if err := os.Remove(filepath.Join(st.o.OutDir, ProfileDir, "repeats")); err != nil && !errors.Is(err, os.ErrNotExist) {
		st.log.Debug("profiles: repeats directory kept", "err", err)
	}
}
