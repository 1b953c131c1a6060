package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/nsrun"
	"golang.org/x/sys/unix"
)

// NS is a named network namespace created by the lab.
type NS struct {
	Name string

	fd     netns.NsHandle
	handle *netlink.Handle

	mu    sync.Mutex
	procs []*os.Process
}

// Path returns the namespace's bind mount, /run/netns/<name>.
func (n *NS) Path() string { return filepath.Join(NetnsDir, n.Name) }

// Fd returns a file descriptor of the namespace, valid until the lab is
// down.
func (n *NS) Fd() int { return int(n.fd) }

// Handle returns a netlink handle bound to the namespace.
func (n *NS) Handle() *netlink.Handle { return n.handle }

// Do runs f on a new OS thread switched into the namespace, following
// cilium/ebpf's internal/testutils NetNS.Do: sockets f creates belong to the
// namespace and can be used from anywhere afterwards. f must not start
// goroutines that expect to be in the namespace, nor unlock the thread. If
// the thread cannot be switched back, it stays locked so that the Go runtime
// discards it rather than reuse it.
func (n *NS) Do(f func() error) error {
	if err := nsrun.Do(netns.NsHandle(n.fd), f); err != nil {
		return fmt.Errorf("in netns %s: %w", n.Name, err)
	}
	return nil
}

// Start starts cmd inside the namespace: cmd.Start runs on a thread switched
// into the namespace, and the child inherits that thread's namespace. The
// process is killed by the lab's Down if it is still running then; the
// caller still owns cmd and must Wait for it. The child has no parent-death
// signal (the forking thread is a throw-away one): use a Spawner for
// processes that must not outlive this one.
func (n *NS) Start(cmd *exec.Cmd) error {
	if err := n.Do(cmd.Start); err != nil {
		return fmt.Errorf("start %s in %s: %w", cmd.Path, n.Name, err)
	}
	n.mu.Lock()
	n.procs = append(n.procs, cmd.Process)
	n.mu.Unlock()
	return nil
}

// ReadSysctl reads a sysctl of the namespace, e.g. "net/ipv4/ip_forward".
func (n *NS) ReadSysctl(key string) (string, error) {
	var v []byte
	err := n.Do(func() error {
		var err error
		v, err = os.ReadFile(filepath.Join("/proc/sys", key))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read sysctl %s in %s: %w", key, n.Name, err)
	}
	return strings.TrimSpace(string(v)), nil
}

// WriteSysctls writes sysctls of the namespace (keys like
// "net/ipv4/ip_forward"), in order, from one thread inside it.
func (n *NS) WriteSysctls(kv ...[2]string) error {
	return n.Do(func() error {
		for _, e := range kv {
			if err := os.WriteFile(filepath.Join("/proc/sys", e[0]), []byte(e[1]), 0o644); err != nil {
				return fmt.Errorf("set sysctl %s=%s in %s: %w", e[0], e[1], n.Name, err)
			}
		}
		return nil
	})
}

// ConntrackCount returns the number of connection-tracking entries in the
// namespace (net.netfilter.nf_conntrack_count). It is 0 when conntrack was
// never loaded.
func (n *NS) ConntrackCount() (int, error) {
	v, err := n.ReadSysctl("net/netfilter/nf_conntrack_count")
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	c, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("conntrack count in %s: %w", n.Name, err)
	}
	return c, nil
}

// createNS creates a named network namespace without moving the calling
// thread: the unshare happens on a throw-away locked thread.
func createNS(name string) (*NS, error) {
	h, err := nsrun.NewNamed(name)
	if err != nil {
		if !errors.Is(err, os.ErrExist) {
			_ = removeNS(name) // a half-made mount point; never someone else's
		}
		return nil, fmt.Errorf("create netns %s: %w", name, err)
	}
	h.Close()
	ns, err := openNS(name)
	if err != nil {
		_ = removeNS(name)
		return nil, err
	}
	if err := ns.handle.LinkSetUp(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo"}}); err != nil {
		ns.close()
		_ = removeNS(name)
		return nil, fmt.Errorf("set lo up in %s: %w", name, err)
	}
	return ns, nil
}

// openNS opens an existing named namespace.
func openNS(name string) (*NS, error) {
	fd, err := netns.GetFromPath(filepath.Join(NetnsDir, name))
	if err != nil {
		return nil, fmt.Errorf("open netns %s: %w", name, err)
	}
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("netlink handle in %s: %w", name, err)
	}
	return &NS{Name: name, fd: fd, handle: h}, nil
}

// close releases the namespace's descriptors (the namespace itself stays
// while it is mounted).
func (n *NS) close() {
	if n.handle != nil {
		n.handle.Close()
		n.handle = nil
	}
	if n.fd.IsOpen() {
		n.fd.Close()
		n.fd = netns.None()
	}
}

// killStarted kills the processes started with Start that still run.
func (n *NS) killStarted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.procs {
		_ = p.Kill() // fails harmlessly if the process already ended
	}
	n.procs = nil
}

// removeNS kills every process still inside the named namespace, unmounts
// it and removes its file. A missing namespace is not an error.
func removeNS(name string) error {
	path := filepath.Join(NetnsDir, name)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("stat %s: %w", path, err)
	}
	var errs []error
	if err := killProcsInNetns(st.Ino); err != nil {
		errs = append(errs, fmt.Errorf("netns %s: %w", name, err))
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("unmount %s: %w", path, err))
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove %s: %w", path, err))
	}
	return errors.Join(errs...)
}

// killProcsInNetns sends SIGKILL to every process (other than this one)
// whose network namespace has inode ino. The namespace itself goes away
// once the last of them has died.
func killProcsInNetns(ino uint64) error {
	pids, err := procsInNetns(ino)
	if err != nil || len(pids) == 0 {
		return err
	}
	self := os.Getpid()
	for _, pid := range pids {
		if pid == self {
			continue // a thread of ours inside Do; never kill ourselves
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill pid %d: %w", pid, err)
		}
	}
	return nil
}

// procsInNetns lists the pids whose network namespace has inode ino.
func procsInNetns(ino uint64) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	want := fmt.Sprintf("net:[%d]", ino)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/net"))
		if err != nil {
			continue // exited, or a kernel thread
		}
		if link == want {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// netnsInUse tells whether any process has a thread in the named namespace
// or holds a file descriptor to it (the bind mount itself does not count):
// someone is using a namespace that has no state file.
func netnsInUse(name string) (bool, error) {
	path := filepath.Join(NetnsDir, name)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("stat netns %s: %w", name, err)
	}
	// A descriptor opened through the bind mount reads as its path, one
	// opened through /proc/<pid>/ns/net as net:[inode].
	want := fmt.Sprintf("net:[%d]", st.Ino)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false, fmt.Errorf("list /proc: %w", err)
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		for _, dir := range []string{"task", "fd"} {
			ents, err := os.ReadDir(filepath.Join("/proc", p.Name(), dir))
			if err != nil {
				continue // exited, or not ours to read
			}
			for _, e := range ents {
				link := filepath.Join("/proc", p.Name(), dir, e.Name())
				if dir == "task" {
					link = filepath.Join(link, "ns/net")
				}
				if l, err := os.Readlink(link); err == nil && (l == want || l == path) {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// listNS lists the named namespaces whose name starts with Prefix.
func listNS() ([]string, error) {
	ents, err := os.ReadDir(NetnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", NetnsDir, err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
