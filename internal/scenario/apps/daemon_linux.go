package apps

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/procfs"
)

// programs each application needs, server first.
var programs = map[string][]string{
	HTTP: {"nginx", "curl"},
	FTP:  {"vsftpd", "curl"},
	SCP:  {"sshd", "scp", "ssh", "ssh-keygen"},
}

// sbinDirs are searched after PATH: Debian installs the daemons there,
// and a user's PATH may lack it.
var sbinDirs = []string{"/usr/sbin"}

// lookProgram finds a program on PATH or in sbinDirs, or says how to
// install it.
func lookProgram(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (install: %s)", name, InstallHint)
}

// probe says why an application cannot run here: a missing program (or,
// for FTP, the ftp user the vsftpd package creates).
func probe(app string) error {
	for _, p := range programs[app] {
		if _, err := lookProgram(p); err != nil {
			return err
		}
	}
	if app == FTP {
		if _, err := user.Lookup("ftp"); err != nil {
			return fmt.Errorf("no user ftp, which vsftpd's package creates (reinstall: apt-get install --reinstall vsftpd)")
		}
	}
	return nil
}

// daemon is a server process started in the server pod's namespace.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error // the Wait error, once done is closed
}

// lockedBuffer is a bytes.Buffer safe for the process's writer and our
// reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}

// startDaemon starts cmd in ns through sp and waits until it accepts TCP
// connections on addr (dialled from ns), or says why not: its exit and
// stderr, or a timeout.
func startDaemon(ctx context.Context, sp *lab.Spawner, ns *lab.NS, name string, cmd *exec.Cmd, addr netip.AddrPort) (*daemon, error) {
	d := &daemon{name: name, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = d.stderr, d.stderr
	// When ctx ends (the suite interrupted), SIGTERM lets the daemon stop
	// its workers; SIGKILL follows after WaitDelay. WaitDelay also bounds
	// Wait when a worker that outlived its master still holds the output
	// pipe (the spawner's cgroup kills it at Close).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	if err := sp.Start(ns, cmd, nil); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { d.err = cmd.Wait(); close(d.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var conn net.Conn
		err := ns.Do(func() error {
			var err error
			conn, err = net.DialTimeout("tcp", addr.String(), time.Second)
			return err
		})
		if err == nil {
			conn.Close()
			return d, nil
		}
		select {
		case <-d.done:
			return nil, fmt.Errorf("%s exited before it listened on %s: %v: %s", name, addr, d.err, firstLine(d.stderr.String()))
		case <-ctx.Done():
			d.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("%s does not listen on %s after 10s: %s", name, addr, firstLine(d.stderr.String()))
		}
	}
}

// stop ends the daemon (SIGTERM, then SIGKILL after 2s) and waits for it.
func (d *daemon) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(2 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done // bounded by WaitDelay
	}
}

// alive says whether the daemon still runs, or why not.
func (d *daemon) alive() error {
	select {
	case <-d.done:
		return fmt.Errorf("%s exited: %v: %s", d.name, d.err, firstLine(d.stderr.String()))
	default:
		return nil
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// nginxCmd runs nginx with its own config and prefix; -e sends the errors
// it logs before reading the config to the directory too (never to
// /var/log/nginx).
func nginxCmd(ctx context.Context, bin string, l layout) *exec.Cmd {
	return exec.CommandContext(ctx, bin, "-c", l.path("nginx.conf"), "-p", l.Dir, "-e", l.path("nginx-error.log"))
}

// vsftpdCmd runs vsftpd with its own config file (it reads no other).
func vsftpdCmd(ctx context.Context, bin string, l layout) *exec.Cmd {
	return exec.CommandContext(ctx, bin, l.path("vsftpd.conf"))
}

// sshdCmd runs sshd in the foreground (-D), logging to stderr (-e), with
// its own config and host key. sshd insists on its privilege-separation
// directory /run/sshd, a path compiled in: rather than create it on the
// host, sshd runs in a mount namespace of its own where a small tmpfs
// covers /run and holds an empty /run/sshd — the host's /run is not
// touched, and whatever sshd records there (utmp) stays in that tmpfs.
//
// The namespace comes from clone (Cloneflags), not from Unshareflags: for
// the latter Go remounts "/" private itself, which fails with EINVAL in a
// chroot whose root is not a mount point. The script makes "/" private
// instead, or, where "/" is not a mount point, the /run mount the tmpfs
// goes on: either way the tmpfs cannot propagate back to the host.
func sshdCmd(ctx context.Context, bin string, l layout) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", sshdScript, "sh", bin, "-D", "-e",
		"-f", l.path("sshd_config"), "-h", l.path("ssh_host_ed25519_key"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	return cmd
}

const sshdScript = `{ mount --make-rprivate / 2>/dev/null || mount --make-rprivate /run; } &&
mount -t tmpfs -o mode=0755,size=1m cnibench-apps-run /run && mkdir -m 0755 /run/sshd && exec "$@"`

// writeFiles creates the daemon's directory layout and one file per size,
// of pseudo-random bytes (nothing on the path can compress them),
// readable by the unprivileged users the daemons switch to.
func writeFiles(l layout, sizes []size) error {
	for _, d := range []string{l.Dir, l.Files, l.path("empty"), l.path("tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	buf := make([]byte, 1<<20)
	var x uint64 = 0x9e3779b97f4a7c15
	for i := range buf {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		buf[i] = byte(x)
	}
	for _, sz := range sizes {
		f, err := os.OpenFile(filepath.Join(l.Files, fileName(sz.label)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		for left := sz.bytes; left > 0; {
			n := min(left, int64(len(buf)))
			if _, err := f.Write(buf[:n]); err != nil {
				f.Close()
				return err
			}
			left -= n
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func fileName(sizeLabel string) string { return "f-" + sizeLabel + ".bin" }

// sshKeygen generates an ed25519 key pair at path (and path.pub).
func sshKeygen(ctx context.Context, bin, path string) error {
	out, err := exec.CommandContext(ctx, bin, "-q", "-t", "ed25519", "-N", "", "-C", "cnibench-apps", "-f", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ssh-keygen %s: %v: %s", filepath.Base(path), err, firstLine(string(out)))
	}
	return nil
}

// version is a program's version line (for the results' config), or "".
func version(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return firstLine(string(out))
}

// procTreeCPU is the CPU seconds of pid and its descendants: each live
// process's utime+stime plus the cutime+cstime of the children it reaped
// (so a child that ended inside the window is counted in its parent).
func procTreeCPU(root int) (float64, error) {
	procs, err := procfs.ReadAll()
	if err != nil {
		return 0, err
	}
	ticks, err := procs.TreeTicks(root, true)
	return float64(ticks) / procfs.UserHZ, err
}
