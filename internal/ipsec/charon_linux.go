package ipsec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// charonOutFile receives charon's stdout and stderr (errors before its log
// is open).
const charonOutFile = "charon.out"

// instance is one running charon.
type instance struct {
	cfg    UserspaceConfig
	dir    string
	ownDir bool // created by newInstance: removed by stop

	cmd     *exec.Cmd
	exited  chan struct{} // closed when charon has exited
	exitErr error         // its Wait error, set before exited is closed
	release func()        // lets the thread that forked charon exit
	// undoAddr removes the source address ensureSourceAddr added.
	undoAddr func() error

	stopOnce sync.Once
	stopErr  error
}

// newInstance creates the instance's directory (cfg.Dir or a new
// temporary one, mode 0700: it holds the PSK) and writes its files.
func newInstance(cfg UserspaceConfig) (*instance, error) {
	i := &instance{cfg: cfg, dir: cfg.Dir, exited: make(chan struct{})}
	if i.dir == "" {
		d, err := os.MkdirTemp("", "cnibench-ipsec-")
		if err != nil {
			return nil, fmt.Errorf("userspace ESP: create config dir: %w", err)
		}
		i.dir, i.ownDir = d, true
		if len(d) > maxDirLen {
			return nil, errors.Join(fmt.Errorf("userspace ESP: temp dir %s too long for a unix socket path (set TMPDIR or Dir)", d), i.stop())
		}
	} else if err := os.MkdirAll(i.dir, 0o700); err != nil {
		return nil, fmt.Errorf("userspace ESP: create %s: %w", i.dir, err)
	}
	if err := i.writeFiles(); err != nil {
		return nil, errors.Join(fmt.Errorf("userspace ESP: %w", err), i.stop())
	}
	return i, nil
}

func (i *instance) writeFiles() error {
	if err := os.Chmod(i.dir, 0o700); err != nil {
		return fmt.Errorf("restrict %s: %w", i.dir, err)
	}
	if err := os.MkdirAll(i.path(runSubdir), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", i.path(runSubdir), err)
	}
	// A stale pid file (an earlier charon killed with SIGKILL) would make
	// charon refuse to start if its pid were reused.
	if err := os.Remove(filepath.Join(i.path(runSubdir), "charon.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale pid file: %w", err)
	}
	swan, err := swanctlConf(i.cfg)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{strongswanConfFile, strongswanConf(i.dir), 0o644},
		{swanctlConfFile, swan, 0o600},
	} {
		if err := os.WriteFile(i.path(f.name), f.data, f.mode); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}

func (i *instance) path(name string) string { return filepath.Join(i.dir, name) }

// env is charon's and swanctl's environment: only the instance's
// strongswan.conf (so neither reads /etc/strongswan.conf) and a PATH.
func (i *instance) env() []string {
	return []string{"STRONGSWAN_CONF=" + i.path(strongswanConfFile), "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
}

// start starts charon; see startCharon.
func (i *instance) start(netnsFd int) error {
	out, err := os.OpenFile(i.path(charonOutFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("userspace ESP: %w", err)
	}
	defer out.Close() // the child has its own copy
	i.cmd = exec.Command(charonPath)
	i.cmd.Env = i.env()
	i.cmd.Stdout, i.cmd.Stderr = out, out
	i.cmd.Dir = i.dir
	// SIGKILL when the forking thread exits: startCharon keeps that
	// thread until stop, so this fires only if this process dies first.
	i.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	release, err := startCharon(netnsFd, i.path(runSubdir), i.cmd)
	if err != nil {
		return fmt.Errorf("userspace ESP: start charon: %w", err)
	}
	i.release = release
	go func() {
		i.exitErr = i.cmd.Wait()
		close(i.exited)
	}()
	return nil
}

// startCharon starts cmd on a locked thread moved into the network
// namespace netnsFd and into a private mount namespace in which runDir is
// bind-mounted on /run (/var/run): charon's pid file is fixed at
// /var/run/charon.pid and charon refuses to start while it names a live
// process, so without this the two nodes' instances (and the host's charon,
// if any) would collide. Nothing is mounted in the host's mount namespace.
//
// The thread is never unlocked: it carries namespaces no other goroutine
// may inherit, and the runtime ends it when its goroutine returns. That
// goroutine waits for release, because cmd's parent-death signal is tied
// to the thread that forked it.
func startCharon(netnsFd int, runDir string, cmd *exec.Cmd) (release func(), err error) {
	pidDir, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		return nil, fmt.Errorf("resolve /var/run: %w", err)
	}
	errc := make(chan error, 1)
	releasec := make(chan struct{})
	go func() {
		runtime.LockOSThread() // deliberately never unlocked
		errc <- func() error {
			// CLONE_FS: the thread stops sharing its root and cwd with
			// the rest of the process, which a new mount namespace needs.
			if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
				return fmt.Errorf("unshare a mount namespace: %w", err)
			}
			// Private first, so that the bind mount does not propagate
			// back to the host's mount namespace. In a chroot "/" is no
			// mount point (EINVAL): then the mount /var/run is on must be
			// one, and it is made private instead.
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				if !errors.Is(err, unix.EINVAL) {
					return fmt.Errorf("make / private in charon's mount namespace: %w", err)
				}
				if err2 := unix.Mount("", pidDir, "", unix.MS_REC|unix.MS_PRIVATE, ""); err2 != nil {
					return fmt.Errorf("make / (%w) or %s (%w) private in charon's mount namespace: neither is a mount point (a chroot without its own /run mount?)", err, pidDir, err2)
				}
			}
			if err := unix.Mount(runDir, pidDir, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind-mount %s on %s in charon's mount namespace: %w", runDir, pidDir, err)
			}
			if err := unix.Setns(netnsFd, unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("enter the node's netns: %w", err)
			}
			return cmd.Start()
		}()
		<-releasec
	}()
	if err := <-errc; err != nil {
		close(releasec)
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(releasec) }) }, nil
}
