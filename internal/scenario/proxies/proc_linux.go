package proxies

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/procfs"
)

// ErrNotSupported is wrapped by the skip reason of a point this machine
// or datapath cannot run; it is the backend's, so that the suite records
// a point whose Prepare returns it as skipped.
var ErrNotSupported = backend.ErrNotSupported

// sbinDirs are where Debian installs haproxy and nginx, searched when
// PATH (a user's) lacks them.
var sbinDirs = []string{"/usr/sbin", "/sbin"}

// lookProgram finds a proxy's program, or says how to install it.
func lookProgram(kind string) (string, error) {
	if p, err := exec.LookPath(kind); err == nil {
		return p, nil
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, kind)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found (install it: %s)", ErrNotSupported, kind, InstallHint)
}

// probe says why a point's proxy cannot run here, or nil.
func probe(proxy string) error {
	if proxy == None {
		return nil
	}
	_, err := lookProgram(proxy)
	return err
}

// proxyProc is one running proxy: its process group (nginx's master and
// worker, HAProxy's one process) in a lab namespace.
type proxyProc struct {
	cfg ProxyConfig
	ns  *lab.NS
	out string // its stdout and stderr

	cmd    *exec.Cmd
	exited chan struct{}

	stopOnce sync.Once
}

// startProxy writes cfg's files into cfg.Dir and starts the proxy in ns
// through sp: in the foreground, in a process group of its own, killed if
// this process dies (the spawner's parent-death signal).
func startProxy(sp *lab.Spawner, ns *lab.NS, cfg ProxyConfig) (*proxyProc, error) {
	prog, err := lookProgram(cfg.Kind)
	if err != nil {
		return nil, err
	}
	conf, err := cfg.Render()
	if err != nil {
		return nil, err
	}
	if err := writeConfig(cfg, conf); err != nil {
		return nil, err
	}
	p := &proxyProc{cfg: cfg, ns: ns, out: filepath.Join(cfg.Dir, "out.log"), exited: make(chan struct{})}
	out, err := os.OpenFile(p.out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", cfg.Kind, cfg.Role, err)
	}
	defer out.Close() // the child has its own copy
	p.cmd = exec.Command(prog, cfg.Args()...)
	p.cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	p.cmd.Dir = cfg.Dir
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sp.Start(ns, p.cmd, nil); err != nil {
		return nil, fmt.Errorf("%s (%s): %w", cfg.Kind, cfg.Role, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// writeConfig creates cfg.Dir (mode 0700) and writes conf into it.
func writeConfig(cfg ProxyConfig, conf []byte) error {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("%s %s: %w", cfg.Kind, cfg.Role, err)
	}
	if err := os.WriteFile(cfg.ConfigFile(), conf, 0o600); err != nil {
		return fmt.Errorf("%s %s: write configuration: %w", cfg.Kind, cfg.Role, err)
	}
	return nil
}

// alive says why the proxy is no longer running, or nil.
func (p *proxyProc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s (%s proxy in %s) exited: %s", p.cfg.Kind, p.cfg.Role, p.ns.Name, p.lastOutput())
	default:
		return nil
	}
}

// lastOutput is the last lines the proxy wrote, for errors.
func (p *proxyProc) lastOutput() string {
	b, err := os.ReadFile(p.out)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "no output"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// waitListening waits until the proxy accepts connections on its listen
// address (dialled from its namespace), or it exits, or timeout.
func (p *proxyProc) waitListening(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if err := p.alive(); err != nil {
			return err
		}
		last = p.ns.Do(func() error {
			c, err := net.DialTimeout("tcp", p.cfg.Listen.String(), 200*time.Millisecond)
			if err != nil {
				return err
			}
			return c.Close()
		})
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s (%s proxy in %s) not listening on %v after %v: %v; its output: %s", p.cfg.Kind, p.cfg.Role, p.ns.Name, p.cfg.Listen, timeout, last, p.lastOutput())
}

// ticks is the CPU time of the proxy's processes (the group leader and
// its children), in USER_HZ ticks; an error if the proxy exited.
func (p *proxyProc) ticks() (uint64, error) {
	if err := p.alive(); err != nil {
		return 0, err
	}
	return treeTicks(p.cmd.Process.Pid)
}

// treeTicks sums utime + stime of pid and its descendants (nginx's
// workers), read from /proc/<pid>/stat.
func treeTicks(pid int) (uint64, error) {
	procs, err := procfs.ReadAll()
	if err != nil {
		return 0, err
	}
	return procs.TreeTicks(pid, false)
}

// stop ends the proxy's process group: SIGTERM (both proxies shut down at
// once on it), then SIGKILL after a grace period; it may be called more
// than once.
func (p *proxyProc) stop() {
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid // Setpgid: the group is the leader's pid
		_ = unix.Kill(-pgid, unix.SIGTERM)
		select {
		case <-p.exited: // nginx's master exits after its workers
		case <-time.After(3 * time.Second):
			// The leader is not reaped yet, so its pid still names the
			// group: workers included.
			_ = unix.Kill(-pgid, unix.SIGKILL)
			<-p.exited
		}
	})
}

// httpGet sends one GET to addr from ns and returns the status line.
func httpGet(ns *lab.NS, addr string, timeout time.Duration) (string, error) {
	var status string
	err := ns.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		status = strings.TrimSpace(line)
		return err
	})
	return status, err
}
