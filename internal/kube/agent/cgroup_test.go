package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	uidA = "6f1c2c9e-8f0a-4c2b-9a55-0d3d0b6c1e7f"
	uidB = "0a8b7c6d-1111-2222-3333-444455556666"
)

// slice is the systemd driver's name of a pod's cgroup.
func slice(class, uid string) string {
	u := strings.ReplaceAll(uid, "-", "_")
	if class == "" {
		return "kubepods-pod" + u + ".slice"
	}
	return "kubepods-" + class + "-pod" + u + ".slice"
}

// tree writes files (path relative to root: content) under a new root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// v1 returns a v1 pod cgroup's files: CPU under cpuDir, memory under
// memDir (both relative to the root), with usage and inactive bytes.
func v1(cpuDir, memDir string, cpuNS, usage, inactive uint64) map[string]string {
	return map[string]string{
		filepath.Join(cpuDir, "cpuacct.usage"):         fmt.Sprintf("%d\n", cpuNS),
		filepath.Join(cpuDir, "cgroup.procs"):          "",
		filepath.Join(memDir, "memory.usage_in_bytes"): fmt.Sprintf("%d\n", usage),
		filepath.Join(memDir, "memory.stat"): fmt.Sprintf("cache 1\nrss 2\ninactive_file 999999999\n"+
			"total_cache 5\ntotal_inactive_file %d\ntotal_active_file 7\n", inactive),
	}
}

// v2 returns a v2 pod cgroup's files.
func v2(dir string, usec, current, inactive uint64) map[string]string {
	return map[string]string{
		filepath.Join(dir, "cpu.stat"):       fmt.Sprintf("usage_usec %d\nuser_usec 1\nsystem_usec 2\n", usec),
		filepath.Join(dir, "memory.current"): fmt.Sprintf("%d\n", current),
		filepath.Join(dir, "memory.stat"):    fmt.Sprintf("anon 10\nfile 20\nactive_file 5\ninactive_file %d\n", inactive),
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var v2Root = map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n"}
var hybridMarkers = map[string]string{"unified/cgroup.controllers": "\n"}

func TestReadPodCgroups(t *testing.T) {
	type want struct {
		cpuDir, memDir string
		cpu, ws        uint64
		err            string // a substring; "" for none
	}
	for _, c := range []struct {
		name   string
		files  map[string]string
		layout string
		pods   map[string]want
	}{
		{"v1 cgroupfs cpu,cpuacct", merge(
			v1("cpu,cpuacct/kubepods/burstable/pod"+uidA, "memory/kubepods/burstable/pod"+uidA, 123456789, 5000, 1000),
			v1("cpu,cpuacct/kubepods/pod"+uidB, "memory/kubepods/pod"+uidB, 42, 100, 0)),
			"v1", map[string]want{
				uidA: {"cpu,cpuacct/kubepods/burstable/pod" + uidA, "memory/kubepods/burstable/pod" + uidA, 123456789, 4000, ""},
				uidB: {"cpu,cpuacct/kubepods/pod" + uidB, "memory/kubepods/pod" + uidB, 42, 100, ""},
			}},
		{"v1 cgroupfs cpuacct under a kind node's parents", v1(
			"cpuacct/docker/abc123/kubepods/besteffort/pod"+uidA, "memory/docker/abc123/kubepods/besteffort/pod"+uidA, 7, 10, 3),
			"v1", map[string]want{
				uidA: {"cpuacct/docker/abc123/kubepods/besteffort/pod" + uidA, "memory/docker/abc123/kubepods/besteffort/pod" + uidA, 7, 7, ""},
			}},
		{"v1 systemd burstable and besteffort", merge(
			v1("cpu,cpuacct/kubepods.slice/kubepods-burstable.slice/"+slice("burstable", uidA),
				"memory/kubepods.slice/kubepods-burstable.slice/"+slice("burstable", uidA), 11, 20, 5),
			v1("cpu,cpuacct/kubepods.slice/kubepods-besteffort.slice/"+slice("besteffort", uidB),
				"memory/kubepods.slice/kubepods-besteffort.slice/"+slice("besteffort", uidB), 12, 30, 40)),
			"v1", map[string]want{
				uidA: {"cpu,cpuacct/kubepods.slice/kubepods-burstable.slice/" + slice("burstable", uidA),
					"memory/kubepods.slice/kubepods-burstable.slice/" + slice("burstable", uidA), 11, 15, ""},
				// inactive above usage: the working set is floored at 0.
				uidB: {"cpu,cpuacct/kubepods.slice/kubepods-besteffort.slice/" + slice("besteffort", uidB),
					"memory/kubepods.slice/kubepods-besteffort.slice/" + slice("besteffort", uidB), 12, 0, ""},
			}},
		{"v1 systemd guaranteed", v1("cpu,cpuacct/kubepods.slice/"+slice("", uidA), "memory/kubepods.slice/"+slice("", uidA), 1, 2, 1),
			"v1", map[string]want{
				uidA: {"cpu,cpuacct/kubepods.slice/" + slice("", uidA), "memory/kubepods.slice/" + slice("", uidA), 1, 1, ""},
			}},
		{"v2 cgroupfs", merge(v2Root, v2("kubepods/burstable/pod"+uidA, 1500, 8000, 3000)),
			"v2", map[string]want{
				uidA: {"kubepods/burstable/pod" + uidA, "kubepods/burstable/pod" + uidA, 1500000, 5000, ""},
				uidB: {err: "no cgroup pod" + uidB},
			}},
		{"v2 systemd", merge(v2Root, v2("kubepods.slice/kubepods-besteffort.slice/"+slice("besteffort", uidB), 2, 10, 1)),
			"v2", map[string]want{
				uidB: {"kubepods.slice/kubepods-besteffort.slice/" + slice("besteffort", uidB),
					"kubepods.slice/kubepods-besteffort.slice/" + slice("besteffort", uidB), 2000, 9, ""},
			}},
		{"hybrid prefers v1", merge(hybridMarkers,
			v1("cpu,cpuacct/kubepods/pod"+uidA, "memory/kubepods/pod"+uidA, 100, 50, 10),
			v2("unified/kubepods/pod"+uidA, 999, 999, 0)),
			"hybrid", map[string]want{
				uidA: {"cpu,cpuacct/kubepods/pod" + uidA, "memory/kubepods/pod" + uidA, 100, 40, ""},
			}},
		{"hybrid falls back to v2 for CPU; its memory is v1's", merge(hybridMarkers,
			map[string]string{"cpu,cpuacct/cgroup.procs": ""},
			v1("cpu,cpuacct/other", "memory/kubepods.slice/"+slice("", uidA), 0, 50, 10),
			map[string]string{"unified/kubepods.slice/" + slice("", uidA) + "/cpu.stat": "usage_usec 3\n"}),
			"hybrid", map[string]want{
				uidA: {"unified/kubepods.slice/" + slice("", uidA), "memory/kubepods.slice/" + slice("", uidA), 3000, 40, ""},
			}},
		{"v1 pod without memory cgroup", v1("cpu,cpuacct/kubepods/pod"+uidA, "memory/kubepods/other", 5, 1, 0),
			"v1", map[string]want{
				uidA: {cpuDir: "cpu,cpuacct/kubepods/pod" + uidA, cpu: 5, err: "memory: no cgroup pod" + uidA},
			}},
		{"unreadable counters", merge(v2Root, map[string]string{
			"kubepods/pod" + uidA + "/cpu.stat":       "user_usec 1\n",
			"kubepods/pod" + uidA + "/memory.current": "lots\n"}),
			"v2", map[string]want{
				uidA: {"kubepods/pod" + uidA, "kubepods/pod" + uidA, 0, 0, "no usage_usec"},
			}},
		{"deeper than MaxCgroupDepth", merge(v2Root, v2("a/b/c/d/e/f/g/h/pod"+uidA, 1, 1, 0), v2("a/b/c/d/e/f/g/pod"+uidB, 1, 1, 0)),
			"v2", map[string]want{
				uidA: {err: "within 8 levels"},
				uidB: {"a/b/c/d/e/f/g/pod" + uidB, "a/b/c/d/e/f/g/pod" + uidB, 1000, 1, ""},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.files)
			uids := slices.Sorted(func(yield func(string) bool) {
				for u := range c.pods {
					if !yield(u) {
						return
					}
				}
			})
			at := time.Unix(1700000000, 5)
			rep := ReadPodCgroups(root, uids, func() time.Time { return at })
			if rep.Schema != SchemaCgroup || rep.Layout != c.layout || rep.Error != "" || len(rep.Pods) != len(uids) {
				t.Fatalf("got %+v, want layout %s and %d pods", rep, c.layout, len(uids))
			}
			for i, p := range rep.Pods {
				w := c.pods[uids[i]]
				errOK := (w.err == "") == (p.Error == "") && strings.Contains(p.Error, w.err)
				if p.UID != uids[i] || p.CPUCgroup != w.cpuDir || p.MemoryCgroup != w.memDir || p.CPUUsageNanos != w.cpu ||
					p.MemoryWorkingSetBytes != w.ws || p.TimeUnixNano != at.UnixNano() || !errOK {
					t.Errorf("pod %s: got %+v, want %+v", uids[i], p, w)
				}
			}
		})
	}
}

func TestReadPodCgroupsDuplicateUID(t *testing.T) {
	root := tree(t, merge(v2Root, v2("kubepods/pod"+uidA, 1, 2, 1)))
	rep := ReadPodCgroups(root, []string{uidA, uidB, uidA}, nil)
	if len(rep.Pods) != 3 || rep.Pods[1].Error == "" {
		t.Fatalf("got %+v", rep.Pods)
	}
	for _, i := range []int{0, 2} {
		if p := rep.Pods[i]; p.Error != "" || p.CPUUsageNanos != 1000 || p.MemoryWorkingSetBytes != 1 {
			t.Errorf("pod %d: %+v", i, p)
		}
	}
}

func TestReadPodCgroupsNoCgroupFS(t *testing.T) {
	for _, root := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		rep := ReadPodCgroups(root, []string{uidA}, nil)
		if !strings.Contains(rep.Error, "no cgroup filesystem") || len(rep.Pods) != 0 || rep.Pods == nil {
			t.Errorf("%s: got %+v", root, rep)
		}
	}
}

func TestFindCgroupsStopsAtMatches(t *testing.T) {
	root := tree(t, map[string]string{
		"a/pod1/pod2/x": "", // pod2 inside pod1: not descended into
		"b/pod2/x":      "",
		"c/pod2/x":      "", // a second match: the first (in name order) wins
	})
	got := FindCgroups(root, map[string]int{"pod1": 1, "pod2": 2}, MaxCgroupDepth)
	if got[1] != "a/pod1" || got[2] != "b/pod2" || len(got) != 2 {
		t.Errorf("got %v", got)
	}
	if got := FindCgroups(root, map[string]int{"pod1": 1}, 1); len(got) != 0 {
		t.Errorf("depth 1 found %v", got)
	}
}

// TestRealCgroupFS checks the layout detection and the v1/v2 readers
// against this machine's /sys/fs/cgroup: the memory cgroup this process
// is in is found by walking its hierarchy, and any kubepods tree has its
// pods read. Skipped where /sys/fs/cgroup is not a cgroup filesystem.
func TestRealCgroupFS(t *testing.T) {
	const root = "/sys/fs/cgroup"
	h, err := detectLayout(root)
	if err != nil {
		t.Skipf("no cgroup filesystem here: %v", err)
	}
	t.Logf("%s: layout %s (v1 cpu %q, memory %q, v2 %q)", root, h.layout, h.cpuV1, h.memV1, h.v2)
	own := ownCgroups(t)
	if h.memV1 != "" {
		if p := own["memory"]; p != "" && p != "/" {
			found := FindCgroups(filepath.Join(root, h.memV1), map[string]int{filepath.Base(p): 0}, MaxCgroupDepth)
			if rel, ok := found[0]; !ok {
				t.Errorf("memory cgroup %s not found under %s", p, h.memV1)
			} else if ws, err := readWorkingSet(filepath.Join(root, h.memV1, rel), "memory.usage_in_bytes", "total_inactive_file"); err != nil {
				t.Error(err)
			} else {
				t.Logf("own memory cgroup %s: found at %s, working set %d bytes", p, rel, ws)
			}
		}
	}
	if h.cpuV1 != "" {
		if _, err := readUintFile(filepath.Join(root, h.cpuV1, "cpuacct.usage")); err != nil {
			t.Error(err)
		}
	}
	if h.v2 != "" {
		if _, err := readCPUv2(h.v2); err != nil && h.layout == "v2" {
			t.Error(err)
		}
	}
	// A pod that is not here: the whole tree is walked, and the pod
	// reported as not found.
	t0 := time.Now()
	rep := ReadPodCgroups(root, []string{"00000000-0000-0000-0000-000000000000"}, nil)
	if rep.Error != "" || len(rep.Pods) != 1 || !strings.Contains(rep.Pods[0].Error, "no cgroup") {
		t.Errorf("got %+v", rep)
	}
	t.Logf("a missing pod: %s in %s", rep.Pods[0].Error, time.Since(t0))
}

// TestRealKubepods reads the first pods of this machine's kubepods tree
// through ReadPodCgroups; skipped unless this machine is a Kubernetes node.
func TestRealKubepods(t *testing.T) {
	const root = "/sys/fs/cgroup"
	h, err := detectLayout(root)
	if err != nil {
		t.Skipf("no cgroup filesystem here: %v", err)
	}
	var uids []string
	for _, d := range []string{h.cpuV1, h.memV1, h.v2Relative} {
		base := filepath.Join(root, d)
		filepath.WalkDir(base, func(p string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() || strings.Count(strings.TrimPrefix(p, base), "/") > MaxCgroupDepth {
				return filepath.SkipDir
			}
			if u, ok := podUID(e.Name()); ok && len(uids) < 3 && !slices.Contains(uids, u) {
				uids = append(uids, u)
				return filepath.SkipDir
			}
			return nil
		})
	}
	if len(uids) == 0 {
		t.Skip("no kubepods cgroups here: not a Kubernetes node")
	}
	rep := ReadPodCgroups(root, uids, nil)
	for _, p := range rep.Pods {
		if p.CPUCgroup == "" || p.MemoryCgroup == "" {
			t.Errorf("pod %s: %s", p.UID, p.Error)
		}
		t.Logf("%s: %+v", rep.Layout, p)
	}
}

// podUID is the UID in a pod cgroup's name (either driver's).
func podUID(name string) (string, bool) {
	if u, ok := strings.CutPrefix(name, "pod"); ok && len(u) >= 32 {
		return u, true
	}
	if !strings.HasPrefix(name, "kubepods-") || !strings.HasSuffix(name, ".slice") {
		return "", false
	}
	_, u, ok := strings.Cut(strings.TrimSuffix(name, ".slice"), "pod")
	return strings.ReplaceAll(u, "_", "-"), ok && len(u) >= 32
}

// ownCgroups maps this process's v1 controllers to its cgroup paths.
func ownCgroups(t *testing.T) map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				out[c] = f[2]
			}
		}
	}
	return out
}

// FuzzParseCgroupStat: ParseCgroupStat never panics, every key it returns
// is a line's first field with its value, and writing the map back as a
// flat-keyed file parses to the same map.
func FuzzParseCgroupStat(f *testing.F) {
	f.Add([]byte("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n"))
	f.Add([]byte("cache 1\nrss 2\ntotal_inactive_file 18446744073709551615\n"))
	f.Add([]byte("anon 10\nfile 20\n\ninactive_file 5\nweird line here\nneg -1\nx 1\nx 2\n"))
	f.Add([]byte("a\t1\r\n b  2 \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := ParseCgroupStat(b)
		var keys []string
		for k, v := range m {
			if k == "" || strings.ContainsAny(k, " \t\n") {
				t.Fatalf("key %q", k)
			}
			if !bytes.Contains(b, []byte(k)) || !bytes.Contains(b, []byte(fmt.Sprint(v))) && v != 0 {
				t.Fatalf("%q %d is not in the input", k, v)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var out bytes.Buffer
		for _, k := range keys {
			fmt.Fprintf(&out, "%s %d\n", k, m[k])
		}
		m2 := ParseCgroupStat(out.Bytes())
		if len(m2) != len(m) {
			t.Fatalf("round trip: %v, then %v", m, m2)
		}
		for k, v := range m {
			if m2[k] != v {
				t.Fatalf("round trip: %v, then %v", m, m2)
			}
		}
	})
}

// A node service's cgroup read by path: v1 with a cpuacct hierarchy of its
// own and a unified mirror (the local cluster's host), and v2.
func TestReadPathCgroups(t *testing.T) {
	for _, c := range []struct {
		name           string
		files          map[string]string
		path           string
		cpuDir, memDir string
		cpu, ws        uint64
	}{
		{"v1 hybrid", merge(v1("cpuacct/cnbk8s-n1/kube-proxy", "memory/cnbk8s-n1/kube-proxy", 5000, 300, 100),
			map[string]string{"unified/cgroup.controllers": ""}), "cnbk8s-n1/kube-proxy",
			"cpuacct/cnbk8s-n1/kube-proxy", "memory/cnbk8s-n1/kube-proxy", 5000, 200},
		{"v2", merge(v2Root, v2("system.slice/kube-proxy.service", 3, 50, 20)), "system.slice/kube-proxy.service",
			"system.slice/kube-proxy.service", "system.slice/kube-proxy.service", 3000, 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.files)
			at := time.Unix(1700000000, 7)
			rep := CgroupReport{}
			ReadPathCgroups(&rep, root, []string{c.path, "system.slice/missing.service"}, func() time.Time { return at })
			if len(rep.Cgroups) != 2 {
				t.Fatalf("got %+v", rep.Cgroups)
			}
			g := rep.Cgroups[0]
			if g.Path != c.path || g.CPUCgroup != c.cpuDir || g.MemoryCgroup != c.memDir || g.CPUUsageNanos != c.cpu ||
				g.MemoryWorkingSetBytes != c.ws || g.TimeUnixNano != at.UnixNano() || g.Error != "" || g.UID != "" {
				t.Errorf("got %+v", g)
			}
			if m := rep.Cgroups[1]; !strings.Contains(m.Error, "no cgroup system.slice/missing.service") {
				t.Errorf("missing cgroup: %+v", m)
			}
		})
	}
	rep := CgroupReport{}
	ReadPathCgroups(&rep, t.TempDir(), []string{"a"}, nil)
	if len(rep.Cgroups) != 1 || !strings.Contains(rep.Cgroups[0].Error, "no cgroup filesystem") {
		t.Errorf("no cgroup filesystem: %+v", rep.Cgroups)
	}
}

func TestValidCgroupPath(t *testing.T) {
	for p, want := range map[string]bool{
		"system.slice/kube-proxy.service": true, "cnbk8s-n1/kube-proxy": true, "": false, "/abs": false,
		"a/../b": false, "..": false, "./a": false, "a b": false, "a\n": false, strings.Repeat("a", 257): false,
	} {
		if got := ValidCgroupPath(p); got != want {
			t.Errorf("ValidCgroupPath(%q) = %v, want %v", p, got, want)
		}
	}
}
