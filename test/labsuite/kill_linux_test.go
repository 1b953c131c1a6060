package labsuite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// suiteCmd is a suite long enough to be interrupted anywhere: the eBPF
// datapath (BPF links) and veth-routing (conntrack), baseline added.
func suiteCmd(t *testing.T, bin string) *exec.Cmd {
	cmd := exec.Command(bin, "suite", "--datapaths", "ebpf-host-routing,veth-routing", "--tests", "tcp_rr,tcp_crr",
		"--flows", "1", "--repeat", "50", "--duration", "200ms", "--warmup", "50ms", "--out", t.TempDir())
	// Its own process group, so that signals sent here reach only it; its
	// children are in groups of their own anyway.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Last line of defence, and a check: once the test is over, no lab of
	// this suite process may remain. One that does is removed (so that no
	// later test or CI check trips on it) and fails the test.
	t.Cleanup(func() {
		if cmd.Process == nil {
			return
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		runs, err := statusSettled()
		if err != nil {
			t.Errorf("lab status after the test: %v", err)
		}
		for _, r := range runs {
			if r.State == nil || r.State.PID != cmd.Process.Pid {
				continue
			}
			out, err := exec.Command(bin, "lab", "down", "--run-id", r.RunID).CombinedOutput()
			t.Errorf("the lab of suite pid %d (run %s, %d namespaces) was left behind; removed it (lab down: %v %s)",
				cmd.Process.Pid, r.RunID, len(r.Namespaces), err, bytes.TrimSpace(out))
		}
	})
	return cmd
}

// statusSettled is lab.Status, retried while it fails (a namespace or state
// file of a parallel test may vanish while it is read), so that a check
// never passes for want of an answer.
func statusSettled() ([]lab.RunStatus, error) {
	var err error
	for i := 0; i < 20; i++ {
		var runs []lab.RunStatus
		if runs, err = lab.Status(); err == nil {
			return runs, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return nil, err
}

// procsOf lists the live processes running bin.
func procsOf(bin string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			pids = append(pids, pid)
		}
	}
	return pids
}

// assertNoProcs waits up to d for every process running bin to be gone.
func assertNoProcs(t *testing.T, bin string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pids := procsOf(bin)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cnibench processes of the run still alive %s after the suite died: %v", d, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// linkIDs returns the BPF link ids a process holds open.
func linkIDs(pid int) []link.ID {
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, _ := os.ReadDir(dir)
	var ids []link.ID
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "link_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					ids = append(ids, link.ID(id))
				}
			}
		}
	}
	return ids
}

// labDownDeadRuns runs `cnibench lab down --run-id` for every leaked run
// of the killed suite pid or with namespaces that did not exist before the
// test (never another helper's live or detached lab) and returns those run
// ids.
func labDownDeadRuns(t *testing.T, bin string, before []string, pid int) []string {
	t.Helper()
	runs, err := statusSettled()
	if err != nil {
		t.Fatalf("lab status: %v", err)
	}
	var ids []string
	for _, r := range runs {
		mine := r.State != nil && r.State.PID == pid
		if !r.Leaked || !mine && !slices.ContainsFunc(r.Namespaces, func(n string) bool { return !slices.Contains(before, n) }) {
			continue
		}
		if out, err := exec.Command(bin, "lab", "down", "--run-id", r.RunID).CombinedOutput(); err != nil {
			t.Fatalf("lab down --run-id %s: %v\n%s", r.RunID, err, out)
		}
		ids = append(ids, r.RunID)
	}
	return ids
}

// A suite killed with SIGKILL at any point leaves no process behind, even
// without `lab down` (its children die with it: parent-death signal), and
// after `cnibench lab down` no namespace, state file or BPF link of the run.
func TestSuiteKilledAnywhereLeavesNoProcess(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	bin := cnibenchBinary(t)
	before := labNamespaces(t)
	for _, after := range []time.Duration{30 * time.Millisecond, 100 * time.Millisecond, 170 * time.Millisecond, 250 * time.Millisecond,
		500 * time.Millisecond, 1000 * time.Millisecond, 2000 * time.Millisecond, 3500 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			cmd := suiteCmd(t, bin)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			links := map[link.ID]bool{}
			for deadline := time.Now().Add(after); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				for _, id := range linkIDs(pid) {
					links[id] = true
				}
			}
			children := len(procsOf(bin)) - 1
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = cmd.Wait()
			if strings.Contains(stderr.String(), "is running on this host") {
				t.Skipf("another suite runs on this host: %s", stderr.String())
			}
			t.Logf("killed after %s: %d child process(es), %d BPF link(s) seen", after, children, len(links))
			assertNoProcs(t, bin, 3*time.Second)
			// The run's cgroup (if any) is empty; the next suite removes it.
			cgs, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/*/cnibench-%d-*", pid))
			cgs2, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/cnibench-%d-*", pid))
			for _, cg := range append(cgs, cgs2...) {
				// A child killed by its parent-death signal leaves the
				// cgroup when it has exited, a moment after the suite:
				// bounded, like assertNoProcs.
				var held []byte
				for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
					if held = bytes.TrimSpace(b); err != nil || len(held) == 0 || time.Now().After(deadline) {
						break
					}
				}
				if len(held) > 0 {
					t.Errorf("cgroup %s of the killed run still holds processes 3s after the kill: %s", cg, held)
				}
				t.Cleanup(func() { _ = os.Remove(cg) })
			}
			for _, id := range labDownDeadRuns(t, bin, before, pid) {
				if m, _ := filepath.Glob(filepath.Join(lab.NetnsDir, lab.Prefix+id+"-*")); len(m) > 0 {
					t.Errorf("run %s: namespaces left after lab down: %v", id, m)
				}
				if _, err := os.Stat(lab.StatePath(id)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("run %s: state file left after lab down", id)
				}
			}
			runs, err := statusSettled()
			if err != nil {
				t.Fatalf("lab status: %v", err)
			}
			if slices.ContainsFunc(runs, func(r lab.RunStatus) bool { return r.State != nil && r.State.PID == pid }) {
				t.Errorf("a lab state of the killed suite (pid %d) is left after lab down", pid)
			}
			for id := range links {
				if l, err := link.NewFromID(id); err == nil {
					l.Close()
					t.Errorf("BPF link %d of the run still exists", id)
				}
			}
			for _, ns := range labNamespaces(t) {
				// cnb-t-…: scratch namespaces of other packages' tests,
				// which go test runs at the same time.
				if !slices.Contains(before, ns) && !strings.HasPrefix(ns, lab.Prefix+"t-") {
					if slices.ContainsFunc(runs, func(r lab.RunStatus) bool {
						return r.Leaked && slices.Contains(r.Namespaces, ns)
					}) {
						t.Errorf("leaked namespace %s left after lab down", ns)
					}
				}
			}
		})
	}
}

// SIGTERM and SIGHUP stop a suite like Ctrl-C: partial results kept and
// marked interrupted, exit status 130, nothing left behind. While it runs, a
// second suite is refused with one line naming the first one's pid.
func TestSuiteStopSignalsAndLock(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	bin := cnibenchBinary(t)
	before := labNamespaces(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := suiteCmd(t, bin)
			out := cmd.Args[len(cmd.Args)-1]
			pr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			measuring := make(chan string, 1)
			var log strings.Builder
			go func() {
				sc := bufio.NewScanner(pr)
				sent := false
				for sc.Scan() {
					log.WriteString(sc.Text() + "\n")
					if !sent && (strings.HasPrefix(sc.Text(), "[1/") || strings.Contains(sc.Text(), "is running on this host")) {
						measuring <- sc.Text()
						sent = true
					}
				}
			}()
			select {
			case line := <-measuring:
				if strings.Contains(line, "is running on this host") {
					t.Skipf("another suite runs on this host: %s", line)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no measurement within 20 s")
			}
			// A second suite is refused at once, naming the first.
			second := exec.Command(bin, "suite", "--datapaths", "veth-routing", "--out", t.TempDir())
			msg, err := second.CombinedOutput()
			if err == nil || !strings.Contains(string(msg), fmt.Sprintf("pid %d", cmd.Process.Pid)) || bytes.Count(msg, []byte("\n")) != 1 {
				t.Errorf("second suite: %v, output %q; want one line naming pid %d", err, msg, cmd.Process.Pid)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 130 {
					t.Errorf("suite after %s: %v, want exit status 130\n%s", sig, err, log.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("suite still running 30 s after %s", sig)
			}
			assertNoProcs(t, bin, 3*time.Second)
			assertNothingLeft(t, before)
			data, err := os.ReadFile(filepath.Join(out, "results.json"))
			if err != nil {
				t.Fatalf("no results.json: %v", err)
			}
			set, err := result.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if !set.Interrupted || len(set.Runs) == 0 || set.Config["seed"] == "" {
				t.Errorf("results: interrupted %v, %d runs, seed %q", set.Interrupted, len(set.Runs), set.Config["seed"])
			}
		})
	}
}
