package apps

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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

// withPrograms makes lookProgram see only the programs named: stubs in a
// PATH of their own, the sbin fallback emptied (the test's cleanup
// restores both).
func withPrograms(t *testing.T, names []string) {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	old := sbinDirs
	sbinDirs = nil
	t.Cleanup(func() { sbinDirs = old })
}

// A missing daemon or client (nginx, vsftpd, sshd, curl, scp, ssh,
// ssh-keygen) is recorded skipped with the install command — the reason
// the suite records for the point — for every application that needs it,
// and only for those; a program found in the sbin directories only (a
// PATH without /usr/sbin) is found.
func TestMissingProgramSkipped(t *testing.T) {
	var all []string
	for _, a := range Apps {
		for _, p := range programs[a] {
			if !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	for _, missing := range all {
		t.Run(missing, func(t *testing.T) {
			withPrograms(t, slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == missing }))
			s, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := "skipped: " + missing + " not found (install: apt-get install nginx vsftpd openssh-server curl openssh-client)"
			for _, p := range s.Points() {
				app := p.Labels[LabelApp]
				got := p.SkipReason()
				switch needs := slices.Contains(programs[app], missing); {
				case needs && got != want:
					t.Errorf("%s without %s: %q, want %q", app, missing, got, want)
				case !needs && strings.Contains(got, "not found"):
					t.Errorf("%s, which does not need %s: %q", app, missing, got)
				}
			}
		})
	}
	// Nothing on PATH, the daemons in an sbin directory: HTTP needs curl
	// still, and says so.
	withPrograms(t, nil)
	sbin := t.TempDir()
	for _, d := range []string{"nginx", "vsftpd", "sshd"} {
		if err := os.WriteFile(filepath.Join(sbin, d), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sbinDirs = []string{sbin}
	if p, err := lookProgram("nginx"); err != nil || p != filepath.Join(sbin, "nginx") {
		t.Errorf("nginx in the sbin directory: %q, %v", p, err)
	}
	if err := probe(HTTP); err == nil || err.Error() != "curl not found (install: "+InstallHint+")" {
		t.Errorf("HTTP without curl: %v", err)
	}
}
