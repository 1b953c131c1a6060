package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/engine"
)

// ServePort is where each server pod's `cnibench serve` listens.
const ServePort = engine.DefaultPort

// childEnv is the environment of the run's servers and clients: this
// process's, plus the run's token.
func (d *Deployment) childEnv() []string {
	return append(os.Environ(), engine.TokenEnv+"="+d.spec.Token)
}

// start starts `cnibench ARGS` in ns on the servers' CPUs and returns once
// its first line on stderr says it is ready ("… listening on …" or
// "ready…"); addr names it in messages.
func (d *Deployment) start(ctx context.Context, ns *NS, addr string, stdin []byte, args ...string) (*backend.Process, error) {
	cmd := exec.Command(d.b.o.Binary, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = d.childEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := d.b.spawner.Start(ns, cmd, d.b.serverCPU); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	stop := func() {
		if cmd.Process == nil {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		first := true
		for sc.Scan() {
			line := sc.Text()
			if first {
				first = false
				if strings.Contains(line, "listening on") || strings.HasPrefix(line, "ready") {
					ready <- nil
				} else {
					ready <- errors.New(line)
				}
				continue
			}
			d.b.log.Debug("serve", "addr", addr, "line", line)
		}
		if first {
			ready <- errors.New("exited before listening")
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case err := <-ready:
		if err != nil {
			stop()
			return nil, fmt.Errorf("cnibench %s on %s: %w", args[0], addr, err)
		}
	case <-time.After(15 * time.Second):
		stop()
		return nil, fmt.Errorf("cnibench %s on %s did not start within 15s", args[0], addr)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	return &backend.Process{PID: cmd.Process.Pid, Stop: stop}, nil
}

// runClient runs `cnibench ARGS` (a client: run …) in ns on the clients'
// CPUs, in the spawner's cgroup, and returns its stdout and stderr. On
// ctx's end the client is interrupted, so that it reports what it
// measured.
func (d *Deployment) runClient(ctx context.Context, ns *NS, args []string) (stdout, stderr bytes.Buffer, err error) {
	cmd := exec.Command(d.b.o.Binary, args...)
	// Own process group: the terminal's Ctrl-C reaches only the suite, which
	// then interrupts the client so that it reports what it measured.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = d.childEnv()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err = d.b.spawner.Start(ns, cmd, d.b.clientCPU); err != nil {
		return stdout, stderr, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			err = <-done
		}
	}
	return stdout, stderr, err
}
