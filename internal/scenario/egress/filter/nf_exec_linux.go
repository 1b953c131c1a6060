package filter

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/procfs"
)

// nfTimeout bounds one external netfilter command (a bulk restore of 1M
// rules included) unless ctx has an earlier deadline.
const nfTimeout = 10 * time.Minute

// nfResult is what running one external program returned.
type nfResult struct {
	Stdout string
	// PeakRSS is the child's own peak RSS in bytes (VmHWM sampled every
	// rssSampleEvery while it runs; see sampleRSS).
	PeakRSS int64
}

// rssSampleEvery is how often a child's VmHWM is read.
const rssSampleEvery = 2 * time.Millisecond

// runIn runs prog with args inside t's namespace: the child is forked from a
// thread switched into it (t.Do around cmd.Start), so it inherits the
// namespace and nothing else changes. stdin, if not nil, is fed to the
// child. The error names the command and carries its stderr.
func runIn(ctx context.Context, t Target, stdin []byte, prog string, args ...string) (nfResult, error) {
	ctx, cancel := context.WithTimeout(ctx, nfTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := t.Do(cmd.Start); err != nil {
		return nfResult{}, fmt.Errorf("start %s: %w", prog, err)
	}
	stopRSS := sampleRSS(cmd.Process.Pid)
	err := cmd.Wait()
	var res nfResult
	res.PeakRSS = stopRSS()
	res.Stdout = stdout.String()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		return res, fmt.Errorf("%s %s: %w: %s", prog, shortArgs(args), err, msg)
	}
	return res, nil
}

func shortArgs(args []string) string {
	s := strings.Join(args, " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// sampleRSS samples the peak RSS (VmHWM) of the running process pid until
// stop is called, and stop returns the largest value seen. The rusage of a
// child cannot be used: Go starts children with vfork (CLONE_VM), and at
// exec the kernel folds the parent's mm high-water mark into the child's
// ru_maxrss, so every child would report at least the Go process's own peak.
// VmHWM belongs to the child's own mm after exec. The last few milliseconds
// before exit are not sampled, so the figure is a lower bound that misses
// only growth in those. pid must be an unreaped child: the sampler holds
// /proc/pid open, so a reaped and reused pid reads as gone, not as another
// process.
func sampleRSS(pid int) (stop func() int64) {
	dir, err := unix.Open(fmt.Sprintf("/proc/%d", pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() int64 { return 0 }
	}
	done := make(chan struct{})
	result := make(chan int64, 1)
	go func() {
		defer unix.Close(dir)
		var peak int64
		buf := make([]byte, 4096)
		tick := time.NewTicker(rssSampleEvery)
		defer tick.Stop()
		for {
			if v, ok := readVmHWM(dir, buf); ok {
				peak = max(peak, v)
			}
			select {
			case <-done:
				result <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(done); return <-result }
}

// readVmHWM reads VmHWM from the status file of the /proc/PID directory dir.
func readVmHWM(dir int, buf []byte) (int64, bool) {
	fd, err := unix.Openat(dir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, false
	}
	return procfs.StatusBytes(string(buf[:n]), "VmHWM:")
}

// needPrograms returns an error wrapping ErrNotSupported unless every
// program is on PATH; pkg is the Debian package that provides them.
func needPrograms(pkg string, progs ...string) error {
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%w: %s not found (install the Debian package %s)", ErrNotSupported, p, pkg)
		}
	}
	return nil
}
