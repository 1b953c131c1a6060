package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	utilexec "k8s.io/client-go/util/exec"

	"github.com/cnibench/cnibench/internal/engine"
)

// localPlace is the machine cnibench runs on, outside the cluster: the
// client of the external-to-loadbalancer path.
type localPlace struct{}

func (localPlace) String() string { return "this machine (outside the cluster)" }

// localWaitDelay bounds how long a local client's output is waited for
// once it has exited or been killed (its pipes may be held by nothing
// else, but a stuck child must not hang the run).
const localWaitDelay = 5 * time.Second

// localExecer runs the commands Run gives a pod's container on this
// machine instead, with this executable standing for the image's
// /cnibench and the run's token in the environment (the servers' service
// mode needs it). It implements kube.Execer, so that a local client is run,
// bounded and interrupted exactly as one in a pod (runClient).
type localExecer struct {
	// self is the executable to run for cmd[0] ("": os.Executable()).
	self  string
	token string
}

// Exec implements kube.Execer; namespace, pod and container are ignored.
// A command that exits non-zero returns a utilexec.CodeExitError, which
// kube.ExitCode reads like a pod's.
func (l localExecer) Exec(ctx context.Context, _, _, _ string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(cmd) == 0 {
		return errors.New("local client: no command")
	}
	self := l.self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("local client: this executable: %w", err)
		}
	}
	c := exec.CommandContext(ctx, self, cmd[1:]...)
	c.Env = append(os.Environ(), engine.TokenEnv+"="+l.token)
	c.Stdout, c.Stderr = stdout, stderr
	c.WaitDelay = localWaitDelay
	// stdin is copied by a goroutine of ours, not by exec's: Wait waits
	// for its own copiers, and one blocked reading a stdin that stays
	// open (runClient's pipe, closed only on an interrupt) would hold
	// Wait past the client's exit.
	var in io.WriteCloser
	if stdin != nil {
		var err error
		if in, err = c.StdinPipe(); err != nil {
			return fmt.Errorf("local client: %w", err)
		}
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("local client: %w", err)
	}
	if in != nil {
		go func() {
			_, _ = io.Copy(in, stdin)
			in.Close()
		}()
	}
	err := c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return err
}

// runLocal is Run at localPlace: only a client (`cnibench run`) runs
// outside the cluster.
func (d *Deployment) runLocal(ctx context.Context, args []string) ([]byte, []byte, error) {
	if len(args) == 0 || args[0] != "run" {
		return nil, nil, fmt.Errorf("kubernetes: only a client runs outside the cluster, not %q", args)
	}
	return d.runClient(ctx, localExecer{token: d.token}, "", clientCmd(args), clientDeadline(args[1:]))
}
