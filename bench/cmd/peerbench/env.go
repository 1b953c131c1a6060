package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Namespaces and addresses of the veth environment. The veth pair is
// created inside cnb-bench-a with its peer moved straight into
// cnb-bench-b: nothing is ever attached to the host namespace.
const (
	nsServer   = "cnb-bench-a"
	nsClient   = "cnb-bench-b"
	vethServer = "cnb-bench-va"
	vethClient = "cnb-bench-vb"
	ipServer   = "198.18.0.1"
	ipClient   = "198.18.0.2"
	vethPrefix = 30
)

// Ports used by the harness's servers. They differ from the tools'
// defaults so that a loopback run does not collide with servers other
// people may have running on the host (12865, 12870, 5201).
const (
	portCnibench  = 22870
	portNetserver = 22865
	portIperf3    = 22871
	portHTTP      = 22880
)

// Env is where servers and clients run.
type Env struct {
	Name               string
	ServerNS, ClientNS string // "" = the current (host) namespace
	ServerIP           string
	// ServerCPU and ClientCPU pin servers and clients with taskset -c
	// ("" = not pinned); see the -pin flag.
	ServerCPU, ClientCPU string
}

func setupEnv(ctx context.Context, name string) (*Env, func() error, error) {
	switch name {
	case "loopback":
		return &Env{Name: name, ServerIP: "127.0.0.1"}, func() error { return nil }, nil
	case "veth":
	default:
		return nil, nil, fmt.Errorf("unknown environment %q", name)
	}
	// Stale namespaces from an earlier, killed run are ours (prefix): remove.
	if err := deleteNamespaces(); err != nil {
		return nil, nil, err
	}
	steps := [][]string{
		{"ip", "netns", "add", nsServer},
		{"ip", "netns", "add", nsClient},
		{"ip", "-n", nsServer, "link", "add", vethServer, "type", "veth", "peer", "name", vethClient, "netns", nsClient},
		{"ip", "-n", nsServer, "addr", "add", fmt.Sprintf("%s/%d", ipServer, vethPrefix), "dev", vethServer},
		{"ip", "-n", nsClient, "addr", "add", fmt.Sprintf("%s/%d", ipClient, vethPrefix), "dev", vethClient},
		{"ip", "-n", nsServer, "link", "set", "lo", "up"},
		{"ip", "-n", nsClient, "link", "set", "lo", "up"},
		{"ip", "-n", nsServer, "link", "set", vethServer, "up"},
		{"ip", "-n", nsClient, "link", "set", vethClient, "up"},
		// tcp_crr and non-keep-alive http open a connection per transaction:
		// let the client reuse TIME_WAIT ports (per-netns sysctl; the
		// loopback default 2 already does this on lo). Same for every peer.
		{"ip", "netns", "exec", nsClient, "sysctl", "-q", "-w", "net.ipv4.tcp_tw_reuse=1"},
	}
	cleanup := func() error { return deleteNamespaces() }
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, s[0], s[1:]...).CombinedOutput(); err != nil {
			cerr := cleanup()
			return nil, nil, errors.Join(fmt.Errorf("%s: %w: %s", strings.Join(s, " "), err, bytes.TrimSpace(out)), cerr)
		}
	}
	// Both ends must be up (carrier) before we measure.
	deadline := time.Now().Add(5 * time.Second)
	for _, end := range [][2]string{{nsServer, vethServer}, {nsClient, vethClient}} {
		for {
			out, err := exec.CommandContext(ctx, "ip", "-n", end[0], "-o", "link", "show", "dev", end[1]).CombinedOutput()
			if err == nil && bytes.Contains(out, []byte("state UP")) {
				break
			}
			if time.Now().After(deadline) {
				cerr := cleanup()
				return nil, nil, errors.Join(fmt.Errorf("veth: %s in %s is not up after 5s: %v: %s", end[1], end[0], err, bytes.TrimSpace(out)), cerr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	logf("veth: %s (%s/%d) <-> %s (%s/%d), tcp_tw_reuse=1 in %s", nsServer, ipServer, vethPrefix, nsClient, ipClient, vethPrefix, nsClient)
	return &Env{Name: name, ServerNS: nsServer, ClientNS: nsClient, ServerIP: ipServer}, cleanup, nil
}

func deleteNamespaces() error {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("ip netns list: %w", err)
	}
	var errs []error
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || (f[0] != nsServer && f[0] != nsClient) {
			continue
		}
		if o, err := exec.Command("ip", "netns", "del", f[0]).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %w: %s", f[0], err, bytes.TrimSpace(o)))
		}
	}
	return errors.Join(errs...)
}

// inNS prefixes argv with `ip netns exec NS` (ip execs the program, so the
// process id is the program's).
func inNS(ns string, argv []string) []string {
	if ns == "" {
		return argv
	}
	return append([]string{"ip", "netns", "exec", ns}, argv...)
}

// wrap runs argv in namespace ns, pinned to cpus when not "" (taskset
// execs too, and the affinity is inherited by every thread).
func wrap(ns, cpus string, argv []string) []string {
	argv = inNS(ns, argv)
	if cpus == "" {
		return argv
	}
	return append([]string{"taskset", "-c", cpus}, argv...)
}

// Server is a long-running server process in its own process group.
type Server struct {
	Name   string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan struct{}
	err    error
}

func startServer(ctx context.Context, env *Env, name string, port int, argv []string) (*Server, error) {
	argv = wrap(env.ServerNS, env.ServerCPU, argv)
	cmd := exec.Command(argv[0], argv[1:]...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = groupAttr(true)
	// The parent-death signal kills the server if the harness dies without
	// cleaning up; the normal path is Stop (deferred by every caller).
	err := cmd.Start()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{Name: name, cmd: cmd, stderr: &buf, exited: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	if err := waitListening(ctx, env.ServerNS, port, s); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// waitListening polls `ss` in the server namespace until a TCP socket
// listens on port (connecting would count as a client for some servers).
func waitListening(ctx context.Context, ns string, port int, s *Server) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited before listening: %v: %s", s.Name, s.err, bytes.TrimSpace(s.stderr.Bytes()))
		default:
		}
		argv := inNS(ns, []string{"ss", "-Hltn", fmt.Sprintf("sport = :%d", port)})
		// A failed ss (seen once: killed by a signal on a busy machine) is
		// retried until the deadline; its last error is reported.
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("%s: port %d: ss: %w", s.Name, port, err)
			}
			return fmt.Errorf("%s: nothing listens on port %d after 10s", s.Name, port)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// VmHWM returns the server's peak resident set size so far, in bytes.
func (s *Server) VmHWM() (int64, error) { return procStatusBytes(strconv.Itoa(s.Pid()), "VmHWM") }

// procStatusBytes reads a "kB" field of /proc/PID/status (PID may be
// "self") in bytes.
func procStatusBytes(pid, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("/proc/%s/status %s: %q", pid, field, l)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%s/status: no %s", pid, field)
}

// Alive reports an error if the server has exited.
func (s *Server) Alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited: %v: %s", s.Name, s.err, bytes.TrimSpace(s.stderr.Bytes()))
	default:
		return nil
	}
}

// Stop terminates the server's process group (netserver forks a child per
// test) and waits for it.
func (s *Server) Stop() error {
	select {
	case <-s.exited:
		return nil // already gone; Alive reports unexpected exits
	default:
	}
	pgid := s.cmd.Process.Pid
	if err := killGroup(pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s: %w", s.Name, err)
	}
	select {
	case <-s.exited:
	case <-time.After(3 * time.Second):
		_ = killGroup(pgid, syscall.SIGKILL)
		<-s.exited
	}
	// Children of the group (netserver's per-test forks) may outlive the
	// leader: make sure none is left.
	_ = killGroup(pgid, syscall.SIGKILL)
	return nil
}

// clientRun is the outcome of one client command.
type clientRun struct {
	Stdout, Stderr []byte
	TimeV          []byte // GNU time -v report ("" without GNU time)
	Elapsed        time.Duration
}

// runClient runs argv in the client namespace under GNU time -v (when
// installed), with a timeout. A non-zero exit status is an error carrying
// the program's stderr.
func runClient(ctx context.Context, env *Env, tools *Tools, timeout time.Duration, argv []string) (*clientRun, error) {
	argv = wrap(env.ClientNS, env.ClientCPU, argv)
	var timeFile string
	if tools.Time != "" {
		f, err := os.CreateTemp("", "cnb-bench-time-")
		if err != nil {
			return nil, err
		}
		timeFile = f.Name()
		f.Close()
		defer os.Remove(timeFile)
		argv = append([]string{tools.Time, "-v", "-o", timeFile}, argv...)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.SysProcAttr = groupAttr(false)
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid, syscall.SIGKILL) }
	t0 := time.Now()
	err := cmd.Run()
	r := &clientRun{Stdout: so.Bytes(), Stderr: se.Bytes(), Elapsed: time.Since(t0)}
	if timeFile != "" {
		if b, rerr := os.ReadFile(timeFile); rerr == nil {
			r.TimeV = b
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timeout %v)", err, timeout)
		}
		return r, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, tail(se.Bytes(), so.Bytes()))
	}
	return r, nil
}

func tail(bs ...[]byte) string {
	var s string
	for _, b := range bs {
		if t := strings.TrimSpace(string(b)); t != "" {
			s = t
			break
		}
	}
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return s
}

// Host describes the machine.
type Host struct {
	Hostname string  `json:"hostname"`
	Kernel   string  `json:"kernel"`
	OS       string  `json:"os"`
	CPUModel string  `json:"cpu_model"`
	Cores    int     `json:"cores"`
	MemBytes int64   `json:"mem_bytes"`
	LoadAvg  string  `json:"loadavg_at_start"`
	GoMaxP   int     `json:"gomaxprocs"`
	Extra    *string `json:"note,omitempty"`
}

func hostInfo() Host {
	h := Host{Cores: runtime.NumCPU(), GoMaxP: runtime.GOMAXPROCS(0)}
	h.Hostname, _ = os.Hostname()
	h.Kernel = kernelRelease()
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				h.OS = strings.Trim(v, `"`)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				f := strings.Fields(v)
				if len(f) == 2 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					h.MemBytes = kb * 1024
				}
			}
		}
	}
	h.LoadAvg = loadAvg()
	return h
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
