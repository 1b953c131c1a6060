package lbnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
)

// SetCPUSplit sets where the lab's receive processing runs (see
// CPUSplit) and keeps it across Configure. The CPUs must be distinct
// and ones this process may use.
func (l *LB) SetCPUSplit(s CPUSplit) error {
	if s.On {
		var allowed unix.CPUSet
		if err := unix.SchedGetaffinity(0, &allowed); err != nil {
			return fmt.Errorf("l4lb cpu split: read CPU affinity: %w", err)
		}
		if s.LB == s.Others || s.LB < 0 || s.Others < 0 || !allowed.IsSet(s.LB) || !allowed.IsSet(s.Others) {
			return fmt.Errorf("l4lb cpu split: LB CPU %d and others' CPU %d must be two distinct CPUs this process may use", s.LB, s.Others)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.cpus
	l.cpus = s
	if err := l.applyRPS(); err != nil {
		l.cpus = prev
		return err
	}
	return nil
}

// CPUSplit is the current receive-processing placement.
func (l *LB) CPUSplit() CPUSplit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cpus
}

// applyRPS writes l.cpus to every device of every member (l.mu held).
func (l *LB) applyRPS() error {
	lbMask, otherMask := "0", "0"
	if l.cpus.On {
		lbMask, otherMask = cpuMask(l.cpus.LB), cpuMask(l.cpus.Others)
	}
	others := []*lab.NS{l.sw, l.client, l.clientFW, l.workers[0], l.workers[1], l.backends[0], l.backends[1]}
	var errs []error
	for _, ns := range append([]*lab.NS{l.lbNode}, others...) {
		if ns == nil {
			continue
		}
		mask := otherMask
		if ns == l.lbNode {
			mask = lbMask
		}
		errs = append(errs, setRPS(ns, mask))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("l4lb receive steering: %w", err)
	}
	return nil
}

// cpuMask is rps_cpus' hexadecimal mask of one CPU.
func cpuMask(cpu int) string {
	words := make([]string, cpu/32+1)
	for i := range words {
		words[i] = "00000000"
	}
	words[cpu/32] = fmt.Sprintf("%08x", uint32(1)<<(cpu%32))
	// rps_cpus reads comma-separated 32-bit words, most significant first.
	for i, j := 0, len(words)-1; i < j; i, j = i+1, j-1 {
		words[i], words[j] = words[j], words[i]
	}
	return strings.Join(words, ",")
}

// setRPS writes mask to rps_cpus of every receive queue of every device
// of ns but lo.
func setRPS(ns *lab.NS, mask string) error {
	return inNetnsSysfs(ns, func(sysfs string) error {
		devs, err := os.ReadDir(filepath.Join(sysfs, "class", "net"))
		if err != nil {
			return err
		}
		for _, d := range devs {
			if d.Name() == "lo" {
				continue
			}
			qs, err := filepath.Glob(filepath.Join(sysfs, "class", "net", d.Name(), "queues", "rx-*", "rps_cpus"))
			if err != nil {
				return err
			}
			if len(qs) == 0 && mask != "0" {
				return &lab.UnsupportedError{Feature: "receive packet steering", Reason: "no rps_cpus for " + d.Name() + " (kernel without CONFIG_RPS?)"}
			}
			for _, q := range qs {
				if err := os.WriteFile(q, []byte(mask), 0); err != nil {
					return fmt.Errorf("%s of %s: %w", filepath.Base(filepath.Dir(q)), d.Name(), err)
				}
			}
		}
		return nil
	})
}

// inNetnsSysfs runs f with the sysfs of ns at the directory it is given.
// sysfs shows the devices of the network namespace that creates the
// mount, so a throw-away thread enters ns (never unlocked: the thread
// exits with the goroutine) and creates a detached sysfs mount there
// (fsopen/fsmount): attached nowhere, it cannot propagate to the host's
// mount table, and f reaches it through the mount's file descriptor.
// Kernels before 5.2 lack fsopen; there the thread mounts sysfs in a
// mount namespace of its own instead (legacyNetnsSysfs).
func inNetnsSysfs(ns *lab.NS, f func(sysfs string) error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- func() error {
			if err := unix.Setns(ns.Fd(), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("enter %s: %w", ns.Name, err)
			}
			mfd, err := detachedSysfs()
			if errors.Is(err, unix.ENOSYS) {
				return legacyNetnsSysfs(f)
			}
			if err != nil {
				return err
			}
			defer unix.Close(mfd)
			return f(fmt.Sprintf("/proc/self/fd/%d", mfd))
		}()
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("sysfs of %s: %w", ns.Name, err)
	}
	return nil
}

// detachedSysfs creates a sysfs mount of the calling thread's network
// namespace that is attached nowhere and returns its file descriptor.
func detachedSysfs() (int, error) {
	fsfd, err := unix.Fsopen("sysfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen sysfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("create sysfs: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsmount sysfs: %w", err)
	}
	return mfd, nil
}

// legacyNetnsSysfs mounts sysfs on a temporary directory in a mount
// namespace of the calling (locked, throw-away) thread's own, its mounts
// made slaves so that nothing propagates back. "/" must be a mount point
// for that (it is not in a chroot: EINVAL), which the fsopen path avoids.
func legacyNetnsSysfs(f func(sysfs string) error) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	dir, err := os.MkdirTemp("", "cnb-sysfs-")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := unix.Mount("sysfs", dir, "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount sysfs: %w", err)
	}
	defer func() { _ = unix.Unmount(dir, unix.MNT_DETACH) }()
	return f(dir)
}

// ReadSoftnetStat reads the host's per-CPU receive counters.
func ReadSoftnetStat() ([]SoftnetCPU, error) {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return nil, fmt.Errorf("softnet_stat: %w", err)
	}
	return ParseSoftnetStat(string(b))
}
