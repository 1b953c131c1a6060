package agent

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CgroupReport is the cumulative CPU and memory use of pods, read from the
// host's cgroup filesystem (`agent cgroup`).
type CgroupReport struct {
	Schema string `json:"schema"`
	Root   string `json:"root"`
	// Layout is "v1", "v2" (unified) or "hybrid" (v1 controllers and a
	// v2 tree at Root/unified; the v1 controllers are preferred).
	Layout string `json:"layout"`
	// TimeUnixNano is when the reading began (each pod's has its own).
	TimeUnixNano int64       `json:"time_unix_nano"`
	Pods         []PodCgroup `json:"pods"`
	// Cgroups are the cgroups asked for by path (ReadPathCgroups: a node
	// service's, e.g. kube-proxy run outside pods); UID is empty and Path
	// the path asked for.
	Cgroups []PodCgroup `json:"cgroups,omitempty"`
	// Error says why no pod could be looked for (no cgroup filesystem at
	// Root).
	Error string `json:"error,omitempty"`
}

// PodCgroup is one pod's usage.
type PodCgroup struct {
	UID string `json:"pod_uid"`
	// Path is the cgroup's path below each hierarchy (ReadPathCgroups).
	Path string `json:"path,omitempty"`
	// CPUCgroup and MemoryCgroup are the directories read, relative to
	// Root (e.g. "cpu,cpuacct/kubepods/burstable/pod<UID>").
	CPUCgroup    string `json:"cpu_cgroup,omitempty"`
	MemoryCgroup string `json:"memory_cgroup,omitempty"`
	// CPUUsageNanos is the CPU time the pod's processes used since the
	// cgroup was created: v1 cpuacct.usage, v2 cpu.stat usage_usec×1000.
	CPUUsageNanos uint64 `json:"cpu_usage_ns"`
	// MemoryWorkingSetBytes is the kubelet's working set: v1
	// memory.usage_in_bytes minus memory.stat's total_inactive_file, v2
	// memory.current minus inactive_file, floored at 0.
	MemoryWorkingSetBytes uint64 `json:"memory_working_set_bytes"`
	// TimeUnixNano is when the counters were read.
	TimeUnixNano int64 `json:"time_unix_nano"`
	// Error says what was not found or not read (the rest is filled).
	Error string `json:"error,omitempty"`
}

// DefaultCgroupRoot is where the agent's pods mount the host's cgroup
// filesystem (a hostPath volume of /sys/fs/cgroup).
const DefaultCgroupRoot = "/host/sys/fs/cgroup"

// MaxCgroupDepth is how deep below a hierarchy's root a pod's cgroup is
// looked for (kubepods.slice/kubepods-burstable.slice/<pod> is 3; a kind
// node's docker/<id>/kubepods/burstable/<pod> is 5).
const MaxCgroupDepth = 8

// v1CPUDirs are the v1 hierarchies that hold cpuacct, by preference.
var v1CPUDirs = []string{"cpu,cpuacct", "cpuacct,cpu", "cpuacct"}

// hierarchies are the directories of a cgroup filesystem to search.
type hierarchies struct {
	layout     string
	cpuV1      string // "" when absent
	memV1      string
	v2         string
	v2Relative string // v2 relative to the root: "" or "unified"
}

// detectLayout finds the hierarchies under root.
func detectLayout(root string) (hierarchies, error) {
	if isFile(filepath.Join(root, "cgroup.controllers")) {
		return hierarchies{layout: "v2", v2: root}, nil
	}
	var h hierarchies
	for _, d := range v1CPUDirs {
		if isDir(filepath.Join(root, d)) {
			h.cpuV1 = d
			break
		}
	}
	if isDir(filepath.Join(root, "memory")) {
		h.memV1 = "memory"
	}
	if isFile(filepath.Join(root, "unified", "cgroup.controllers")) {
		h.v2, h.v2Relative = filepath.Join(root, "unified"), "unified"
	}
	switch {
	case h.cpuV1 == "" && h.memV1 == "":
		if h.v2 != "" {
			h.layout = "v2"
			return h, nil
		}
		return h, fmt.Errorf("no cgroup filesystem at %s (neither cgroup.controllers nor cpuacct and memory hierarchies): mount the host's /sys/fs/cgroup there", root)
	case h.v2 != "":
		h.layout = "hybrid"
	default:
		h.layout = "v1"
	}
	return h, nil
}

func isFile(p string) bool { st, err := os.Stat(p); return err == nil && st.Mode().IsRegular() }
func isDir(p string) bool  { st, err := os.Stat(p); return err == nil && st.IsDir() }

// PodCgroupNames are the names a pod's cgroup directory has: "pod<UID>"
// with the cgroupfs driver (v1 and v2), and with the systemd driver
// "kubepods-<class>-pod<UID>.slice" (burstable, besteffort) or
// "kubepods-pod<UID>.slice" (guaranteed), the UID's dashes replaced by
// underscores.
func PodCgroupNames(uid string) []string {
	u := strings.ReplaceAll(uid, "-", "_")
	return []string{"pod" + uid, "kubepods-burstable-pod" + u + ".slice",
		"kubepods-besteffort-pod" + u + ".slice", "kubepods-pod" + u + ".slice"}
}

// FindCgroups walks dir (not following symbolic links) at most maxDepth
// levels down, in name order, for directories named as a key of names,
// and returns the first found for each value (the values are indices),
// relative to dir. It does not descend into a match and stops when every
// value has one.
func FindCgroups(dir string, names map[string]int, maxDepth int) map[int]string {
	want := map[int]bool{}
	for _, v := range names {
		want[v] = true
	}
	found := map[int]string{}
	var walk func(rel string, depth int) bool // false: stop
	walk = func(rel string, depth int) bool {
		ents, err := os.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			return true // gone meanwhile, or unreadable: look elsewhere
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			p := filepath.Join(rel, e.Name())
			if v, ok := names[e.Name()]; ok {
				if _, dup := found[v]; !dup {
					found[v] = p
					if len(found) == len(want) {
						return false
					}
				}
				continue
			}
			if depth < maxDepth && !walk(p, depth+1) {
				return false
			}
		}
		return true
	}
	if len(want) > 0 {
		walk("", 1)
	}
	return found
}

// ReadPodCgroups finds each pod's cgroup under root and reads its CPU and
// memory usage; now stamps each reading (nil: time.Now). A pod not found
// or not read has an Error; only a root that is no cgroup filesystem sets
// the report's.
func ReadPodCgroups(root string, uids []string, now func() time.Time) CgroupReport {
	if now == nil {
		now = time.Now
	}
	rep := CgroupReport{Schema: SchemaCgroup, Root: root, TimeUnixNano: now().UnixNano(), Pods: []PodCgroup{}}
	h, err := detectLayout(root)
	rep.Layout = h.layout
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	// Each name maps to the index of its UID's first occurrence.
	names, first := map[string]int{}, map[string]int{}
	for i, uid := range uids {
		if _, dup := first[uid]; dup {
			continue
		}
		first[uid] = i
		for _, n := range PodCgroupNames(uid) {
			names[n] = i
		}
	}
	search := func(sub string) map[int]string {
		if sub == "" {
			return nil
		}
		return FindCgroups(filepath.Join(root, sub), names, MaxCgroupDepth)
	}
	cpuV1, memV1 := search(h.cpuV1), search(h.memV1)
	var v2 map[int]string
	if h.v2 != "" && (len(cpuV1) < len(first) || len(memV1) < len(first)) {
		v2 = FindCgroups(h.v2, names, MaxCgroupDepth)
	}
	for _, uid := range uids {
		i := first[uid]
		p := PodCgroup{UID: uid}
		var errs []error
		p.TimeUnixNano = now().UnixNano()
		if rel, ok := cpuV1[i]; ok {
			p.CPUCgroup = filepath.Join(h.cpuV1, rel)
			p.CPUUsageNanos, err = readUintFile(filepath.Join(root, p.CPUCgroup, "cpuacct.usage"))
		} else if rel, ok := v2[i]; ok {
			p.CPUCgroup = filepath.Join(h.v2Relative, rel)
			p.CPUUsageNanos, err = readCPUv2(filepath.Join(root, p.CPUCgroup))
		} else {
			err = notFound("cpu", uid, h.cpuV1, h.v2Relative, h.v2 != "")
		}
		errs = append(errs, err)
		if rel, ok := memV1[i]; ok {
			p.MemoryCgroup = filepath.Join(h.memV1, rel)
			p.MemoryWorkingSetBytes, err = readWorkingSet(filepath.Join(root, p.MemoryCgroup),
				"memory.usage_in_bytes", "total_inactive_file")
		} else if rel, ok := v2[i]; ok {
			p.MemoryCgroup = filepath.Join(h.v2Relative, rel)
			p.MemoryWorkingSetBytes, err = readWorkingSet(filepath.Join(root, p.MemoryCgroup),
				"memory.current", "inactive_file")
		} else {
			err = notFound("memory", uid, h.memV1, h.v2Relative, h.v2 != "")
		}
		if err = errors.Join(append(errs, err)...); err != nil {
			p.Error = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		rep.Pods = append(rep.Pods, p)
	}
	return rep
}

// ReadPathCgroups reads the cgroups at paths (relative to each hierarchy
// under root: v1's cpuacct and memory, else v2's) into rep.Cgroups: the
// cgroup of a process that runs outside pods, e.g. kube-proxy as a node
// service (system.slice/kube-proxy.service). A path not found has an
// Error. rep's layout error, if any, is every path's.
func ReadPathCgroups(rep *CgroupReport, root string, paths []string, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	if len(paths) == 0 {
		return
	}
	h, layoutErr := detectLayout(root)
	for _, rel := range paths {
		c := PodCgroup{Path: rel, TimeUnixNano: now().UnixNano()}
		if layoutErr != nil {
			c.Error = layoutErr.Error()
			rep.Cgroups = append(rep.Cgroups, c)
			continue
		}
		rel = filepath.Clean(rel)
		var errs []error
		var err error
		switch {
		case h.cpuV1 != "" && isDir(filepath.Join(root, h.cpuV1, rel)):
			c.CPUCgroup = filepath.Join(h.cpuV1, rel)
			c.CPUUsageNanos, err = readUintFile(filepath.Join(root, c.CPUCgroup, "cpuacct.usage"))
		case h.v2 != "" && isDir(filepath.Join(h.v2, rel)):
			c.CPUCgroup = filepath.Join(h.v2Relative, rel)
			c.CPUUsageNanos, err = readCPUv2(filepath.Join(root, c.CPUCgroup))
		default:
			err = fmt.Errorf("cpu: no cgroup %s under %s", rel, cmp.Or(h.cpuV1, h.v2Relative, "the root"))
		}
		errs = append(errs, err)
		switch {
		case h.memV1 != "" && isDir(filepath.Join(root, h.memV1, rel)):
			c.MemoryCgroup = filepath.Join(h.memV1, rel)
			c.MemoryWorkingSetBytes, err = readWorkingSet(filepath.Join(root, c.MemoryCgroup), "memory.usage_in_bytes", "total_inactive_file")
		case h.v2 != "" && isDir(filepath.Join(h.v2, rel)):
			c.MemoryCgroup = filepath.Join(h.v2Relative, rel)
			c.MemoryWorkingSetBytes, err = readWorkingSet(filepath.Join(root, c.MemoryCgroup), "memory.current", "inactive_file")
		default:
			err = fmt.Errorf("memory: no cgroup %s under %s", rel, cmp.Or(h.memV1, h.v2Relative, "the root"))
		}
		if err = errors.Join(append(errs, err)...); err != nil {
			c.Error = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		rep.Cgroups = append(rep.Cgroups, c)
	}
}

// ValidCgroupPath accepts a cgroup path relative to a hierarchy: not
// empty, not absolute, no ".." element, at most 256 bytes of printable
// characters.
func ValidCgroupPath(p string) bool {
	if p == "" || len(p) > 256 || strings.HasPrefix(p, "/") {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." || e == "." {
			return false
		}
	}
	return strings.IndexFunc(p, func(r rune) bool { return r < 0x21 || r == 0x7f }) < 0
}

func notFound(what, uid, v1, v2rel string, hasV2 bool) error {
	var where []string
	if v1 != "" {
		where = append(where, v1+"/")
	}
	if hasV2 {
		where = append(where, v2rel+"/")
	}
	return fmt.Errorf("%s: no cgroup pod%s or kubepods-[burstable-|besteffort-]pod%s.slice within %d levels of %s", what,
		uid, strings.ReplaceAll(uid, "-", "_"), MaxCgroupDepth, strings.Join(where, " or "))
}

// readCPUv2 is cpu.stat's usage_usec in nanoseconds.
func readCPUv2(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	us, ok := ParseCgroupStat(b)["usage_usec"]
	if !ok {
		return 0, fmt.Errorf("%s: no usage_usec", filepath.Join(dir, "cpu.stat"))
	}
	return us * 1000, nil
}

// readWorkingSet is the usage file's value minus memory.stat's inactive
// key, floored at 0 (cAdvisor's working set).
func readWorkingSet(dir, usageFile, inactiveKey string) (uint64, error) {
	usage, err := readUintFile(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	inactive, ok := ParseCgroupStat(b)[inactiveKey]
	if !ok {
		return 0, fmt.Errorf("%s: no %s", filepath.Join(dir, "memory.stat"), inactiveKey)
	}
	if inactive > usage {
		return 0, nil
	}
	return usage - inactive, nil
}

// readUintFile reads a file holding one unsigned number.
func readUintFile(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ParseCgroupStat parses a flat-keyed cgroup file (cpu.stat, memory.stat:
// "key value" lines). Lines that are not a key and an unsigned number are
// skipped; a key seen twice keeps its first value.
func ParseCgroupStat(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		if _, dup := out[f[0]]; !dup {
			out[f[0]] = v
		}
	}
	return out
}
