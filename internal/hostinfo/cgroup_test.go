package hostinfo

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseCPUStat(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"usage_usec 16202702945\nuser_usec 11142686736\nsystem_usec 5060016208\n", 16202702945 * time.Microsecond, ""},
		{"user_usec 1\nusage_usec 7", 7 * time.Microsecond, ""},
		{"user_usec 1\n", 0, "no usage_usec"},
		{"usage_usec -3\n", 0, "not a count"},
		{"usage_usec 99999999999999999999\n", 0, "not a count"},
		{"usage_usec 9223372036854776\n", 0, "not a count"}, // past time.Duration's range in µs
		{"", 0, "no usage_usec"},
	}
	for _, tt := range tests {
		got, err := ParseCPUStat(strings.NewReader(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseCPUStat(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseCPUStat(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestCgroupPaths(t *testing.T) {
	mounts := "proc /proc proc rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
	if got := CgroupMount(mounts); got != "/sys/fs/cgroup/unified" {
		t.Errorf("CgroupMount = %q", got)
	}
	if got := CgroupMount("proc /proc proc rw 0 0\n"); got != "" {
		t.Errorf("CgroupMount without cgroup2 = %q", got)
	}
	// A hybrid hierarchy lists the v1 controllers first.
	if p, ok := CgroupPath("4:memory:/x\n1:cpu:/\n0::/cnibench-12-abc\n"); !ok || p != "/cnibench-12-abc" {
		t.Errorf("CgroupPath = %q, %v", p, ok)
	}
	if _, ok := CgroupPath("4:memory:/x\n"); ok {
		t.Error("CgroupPath of a v1-only listing found a path")
	}
}

// This process's own cgroup can be read where cgroup v2 is mounted, and
// its usage grows with the work done.
func TestReadOwnCgroupCPU(t *testing.T) {
	dir, err := CgroupDir()
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	if _, err := os.Stat(dir + "/cpu.stat"); err != nil {
		t.Skipf("cgroup %s has no cpu.stat: %v", dir, err)
	}
	a, err := ReadCgroupCPU(dir)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	b, err := ReadCgroupCPU(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || a.ID != b.ID || b.Usage-a.Usage < 20*time.Millisecond {
		t.Errorf("cgroup %s: %+v then %+v after 50 ms of work", dir, a, b)
	}
	pids, err := CgroupPIDs(dir)
	if err != nil || !pids[os.Getpid()] {
		t.Errorf("cgroup %s's processes %v, %v: this process (%d) missing", dir, pids, err, os.Getpid())
	}
	if _, err := CgroupPIDs(dir + "/no-such-cgroup"); err == nil {
		t.Error("a cgroup that does not exist has processes")
	}
}
