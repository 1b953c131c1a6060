package apps

import (
	"os"
	"strings"
	"testing"
)

func TestParseStat(t *testing.T) {
	// Fields 14-17 (utime, stime, cutime, cstime) = 10, 20, 30, 40; a
	// command name with spaces and a bracket.
	line := "1234 (sshd: root) [priv]) S 77 1234 1234 0 -1 4194560 100 0 0 0 10 20 30 40 20 0 1 0 100 1000 10"
	ppid, ticks, err := parseStat(line)
	if err != nil || ppid != 77 || ticks != 100 {
		t.Errorf("parseStat: ppid %d ticks %v err %v", ppid, ticks, err)
	}
	for _, bad := range []string{"", "1 (x S 1", "1 (x) S 1 2", "1 (x) S y 1 1 0 -1 0 0 0 0 0 1 2 3 4"} {
		if _, _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

// This process's tree has a CPU time, and a gone process is an error.
func TestProcTreeCPU(t *testing.T) {
	for i := 0; i < 3e7; i++ {
		_ = strings.Repeat("x", i%3)
	}
	cpu, err := procTreeCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("own CPU %v, %v", cpu, err)
	}
	if _, err := procTreeCPU(1 << 30); err == nil {
		t.Error("a process that does not exist has a CPU time")
	}
}

func TestBatchOf(t *testing.T) {
	for _, tt := range []struct {
		app  string
		size int64
		want int
	}{{HTTP, 4 << 10, MaxBatch}, {FTP, 1 << 20, 16}, {HTTP, 64 << 20, 1}, {SCP, 4 << 10, 1}} {
		if got := batchOf(tt.app, tt.size); got != tt.want {
			t.Errorf("batchOf(%s, %d) = %d, want %d", tt.app, tt.size, got, tt.want)
		}
	}
}
