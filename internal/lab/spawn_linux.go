package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Spawner starts processes inside lab namespaces so that none outlives this
// process, whatever kills it (SIGKILL included).
//
// Every child gets a parent-death signal (SIGKILL). Linux sends it when the
// *thread* that forked the child exits, not the process, so all children are
// forked from one OS thread that the spawner keeps locked for its whole life:
// it exits only when this process dies or when Close is called, and with it
// every child still running is killed. NS.Start, by contrast, forks from a
// throw-away thread and sets no parent-death signal.
//
// Where a cgroup v2 hierarchy is mounted, the children also run in a cgroup
// of their own (cnibench-<pid>-<random> under this process's cgroup), which
// Close empties with cgroup.kill and removes; the cgroup of a spawner killed
// with SIGKILL is removed by the next NewSpawner.
type Spawner struct {
	reqs chan spawnReq
	quit chan struct{}
	once sync.Once

	mu    sync.Mutex
	procs []*os.Process
	// cg holds every child (and its descendants) when a cgroup v2
	// hierarchy is usable: Close kills them all with cgroup.kill. nil
	// otherwise (cgErr says why).
	cg    *runCgroup
	cgErr error
}

type spawnReq struct {
	ns   *NS
	cmd  *exec.Cmd
	cpus *unix.CPUSet
	errc chan error
}

// ErrSpawnerClosed is returned by Start after Close.
var ErrSpawnerClosed = errors.New("spawner closed")

// NewSpawner starts the spawner's thread.
func NewSpawner() (*Spawner, error) {
	s := &Spawner{reqs: make(chan spawnReq), quit: make(chan struct{})}
	s.cg, s.cgErr = newRunCgroup()
	ready := make(chan error, 1)
	go s.loop(ready)
	if err := <-ready; err != nil {
		if s.cg != nil {
			_ = s.cg.kill()
		}
		return nil, err
	}
	return s, nil
}

// Cgroup returns the spawner's cgroup v2 directory, or "" and the reason
// when children run without one.
func (s *Spawner) Cgroup() (string, error) {
	if s.cg == nil {
		return "", s.cgErr
	}
	return s.cg.dir, nil
}

// Start starts cmd inside ns, pinned to cpus when cpus is not nil (the
// child inherits the forking thread's affinity, so no taskset is needed).
// The child gets SIGKILL as its parent-death signal; any SysProcAttr the
// caller set (e.g. Setpgid) is kept. The process is also killed by the
// lab's Down if it still runs then. The caller owns cmd and must Wait.
func (s *Spawner) Start(ns *NS, cmd *exec.Cmd, cpus *unix.CPUSet) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{ns: ns, cmd: cmd, cpus: cpus, errc: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.quit:
		return fmt.Errorf("start %s in %s: %w", cmd.Path, ns.Name, ErrSpawnerClosed)
	}
	if err := <-r.errc; err != nil {
		return fmt.Errorf("start %s in %s: %w", cmd.Path, ns.Name, err)
	}
	ns.mu.Lock()
	ns.procs = append(ns.procs, cmd.Process)
	ns.mu.Unlock()
	s.mu.Lock()
	s.procs = append(s.procs, cmd.Process)
	s.mu.Unlock()
	return nil
}

// Close kills (SIGKILL) every child the spawner started that still runs and
// ends the spawner's thread. Stop children gracefully before closing.
//
// Close kills explicitly rather than relying on the thread's exit: when the
// goroutine happens to run on the main thread, the Go runtime parks that
// thread instead of ending it. When the whole process dies, every thread
// ends and the parent-death signal does the work.
func (s *Spawner) Close() {
	s.once.Do(func() {
		close(s.quit)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.procs {
			_ = p.Kill() // fails harmlessly if it already ended
		}
		s.procs = nil
		if s.cg != nil {
			s.cgErr = s.cg.kill()
		}
	})
}

func (s *Spawner) loop(ready chan<- error) {
	// Deliberately never unlocked: the thread must not be handed to other
	// goroutines (it switches namespaces and affinity) and must end exactly
	// when this goroutine does.
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		ready <- fmt.Errorf("spawner: get current netns: %w", err)
		return
	}
	defer orig.Close()
	var origCPUs unix.CPUSet
	if err := unix.SchedGetaffinity(0, &origCPUs); err != nil {
		ready <- fmt.Errorf("spawner: get CPU affinity: %w", err)
		return
	}
	ready <- nil
	var broken error
	for {
		select {
		case <-s.quit:
			return
		case r := <-s.reqs:
			if broken != nil {
				r.errc <- broken
				continue
			}
			if s.cg != nil {
				r.cmd.SysProcAttr.UseCgroupFD = true
				r.cmd.SysProcAttr.CgroupFD = s.cg.fd
			}
			var err error
			err, broken = spawnOne(r, orig, &origCPUs)
			r.errc <- err
		}
	}
}

// spawnOne forks r.cmd from the calling (locked) thread inside r.ns. The
// second error is set when the thread could not be restored: the spawner
// refuses further work but keeps the thread (and so the children) alive.
func spawnOne(r spawnReq, orig netns.NsHandle, origCPUs *unix.CPUSet) (error, error) {
	if r.cpus != nil {
		if err := unix.SchedSetaffinity(0, r.cpus); err != nil {
			return fmt.Errorf("pin to CPUs: %w", err), nil
		}
		defer func() { _ = unix.SchedSetaffinity(0, origCPUs) }()
	}
	if err := unix.Setns(r.ns.Fd(), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter netns: %w", err), nil
	}
	serr := r.cmd.Start()
	if err := unix.Setns(int(orig), unix.CLONE_NEWNET); err != nil {
		broken := fmt.Errorf("spawner: restore original netns: %w", err)
		return errors.Join(serr, broken), broken
	}
	return serr, nil
}
