package ipsec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where Debian's strongSwan packages put charon and its plugins (charon is
// not on PATH).
const (
	charonPath   = "/usr/lib/ipsec/charon"
	pluginDir    = "/usr/lib/ipsec/plugins"
	swanctlPath  = "/usr/sbin/swanctl" // when /usr/sbin is not on PATH
	tunDevice    = "/dev/net/tun"
	tunInterface = "ipsec0" // the TUN device kernel-libipsec creates
)

// pollInterval is how often StartUserspace retries loading, initiating and
// checking the CHILD_SA, always within its deadline.
const pollInterval = 100 * time.Millisecond

// StartUserspace runs one node's side of a userspace ESP tunnel: it writes
// cfg's configuration to its directory, starts charon in the network
// namespace netnsFd (e.g. lab.NS.Fd()) and in a private mount namespace
// (see startCharon), loads the connection with swanctl over the instance's
// own vici socket, initiates it if cfg.Initiate, and returns once the
// CHILD_SA is installed on this side, or an error when ctx ends (or
// cfg.Timeout passes, if ctx has no deadline) first. Call it for both
// nodes concurrently: the responder's returns when the initiator's
// negotiation reaches it.
//
// If the node has no address inside cfg.LocalNet (pods with /32 addresses
// behind proxy-ARP veths, as in the lab's veth-routing datapath), it adds
// LocalNet's network address to the node's lo for the tunnel's lifetime:
// kernel-libipsec needs one as the source of its route into ipsec0 and
// refuses the CHILD_SA without it (see ensureSourceAddr).
//
// stop terminates charon (SIGTERM, then SIGKILL after 5 s), which removes
// the TUN device and its routes, then removes the address and the
// directory if StartUserspace added or created them. charon also gets
// SIGKILL if this process dies. On error nothing is left running.
func StartUserspace(ctx context.Context, netnsFd int, cfg UserspaceConfig) (stop func() error, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("userspace ESP: %w", err)
	}
	if err := ProbeUserspace(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout())
		defer cancel()
	}
	inst, err := newInstance(cfg)
	if err != nil {
		return nil, err
	}
	// Before charon starts: its first address dump must hold the
	// source address of its routes (see ensureSourceAddr).
	if _, inst.undoAddr, err = ensureSourceAddr(netnsFd, cfg.LocalNet); err != nil {
		return nil, errors.Join(fmt.Errorf("userspace ESP: %w", err), inst.stop())
	}
	if err := inst.start(netnsFd); err != nil {
		return nil, errors.Join(err, inst.stop())
	}
	if err := inst.establish(ctx); err != nil {
		err = fmt.Errorf("userspace ESP %s->%s: %w%s", cfg.Local, cfg.Remote, err, inst.logTail())
		return nil, errors.Join(err, inst.stop())
	}
	return inst.stop, nil
}

// establish loads the configuration, initiates if asked and waits for the
// CHILD_SA.
func (i *instance) establish(ctx context.Context) error {
	if err := i.retry(ctx, "load the configuration", func() error {
		if _, err := os.Stat(i.path(viciSocketFile)); err != nil {
			return fmt.Errorf("vici socket not there yet: %w", err)
		}
		_, err := i.swanctl(ctx, "--load-all", "--noprompt", "--file", i.path(swanctlConfFile))
		if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "connecting to") {
			// charon answered and refused the configuration: retrying
			// cannot help (only "connecting to ... failed", a daemon
			// not accepting yet, can).
			return permanentError{err}
		}
		return err
	}); err != nil {
		return err
	}
	name := i.cfg.name()
	if i.cfg.Initiate {
		// A refusal (the peer not ready yet: no connection loaded, or not
		// listening) ends swanctl with an error and charon drops that
		// IKE_SA, so trying again cannot leave a duplicate behind.
		if err := i.retry(ctx, "initiate", func() error {
			if i.installed(ctx) == nil {
				return nil // the peer initiated too
			}
			_, err := i.swanctl(ctx, "--initiate", "--ike", name, "--child", name, "--timeout", strconv.Itoa(remainingSeconds(ctx)))
			if err != nil && strings.Contains(err.Error(), "AUTHENTICATION_FAILED") {
				// The peer answered: the keys differ, which no retry fixes.
				return permanentError{err}
			}
			return err
		}); err != nil {
			return err
		}
	}
	return i.retry(ctx, "wait for the CHILD_SA", func() error { return i.installed(ctx) })
}

// installed returns nil once the CHILD_SA is installed, else why not.
func (i *instance) installed(ctx context.Context) error {
	out, err := i.swanctl(ctx, "--list-sas", "--noblock", "--ike", i.cfg.name())
	if err != nil {
		return err
	}
	sas, err := ParseListSAs(out)
	if err != nil {
		return err
	}
	c, ok := FindChild(sas, i.cfg.name(), i.cfg.name())
	switch {
	case !ok:
		return fmt.Errorf("no CHILD_SA %s yet (%d IKE_SAs)", i.cfg.name(), len(sas))
	case !c.Installed():
		return fmt.Errorf("CHILD_SA %s is %s", c.Name, c.State)
	}
	return nil
}

// permanentError is an error of f that retry must not retry.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// retry calls f every pollInterval until it succeeds, fails with a
// permanentError, charon exits or ctx ends; the error says what was being
// done and f's last error.
func (i *instance) retry(ctx context.Context, what string, f func() error) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return fmt.Errorf("%s: %w", what, perm.error)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), err)
		case <-i.exited:
			return fmt.Errorf("%s: charon exited: %v (last: %v)", what, i.exitErr, err)
		case <-tick.C:
		}
	}
}

// remainingSeconds is what is left of ctx's deadline, at least 1 s.
func remainingSeconds(ctx context.Context) int {
	d, ok := ctx.Deadline()
	if !ok {
		return int(defaultUserspaceTimeout / time.Second)
	}
	return max(1, int(time.Until(d)/time.Second))
}

// swanctl runs swanctl against the instance's vici socket; on failure the
// error carries its output.
func (i *instance) swanctl(ctx context.Context, args ...string) ([]byte, error) {
	bin, err := swanctl()
	if err != nil {
		return nil, err
	}
	args = append(args, "--uri", "unix://"+i.path(viciSocketFile))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = i.env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("swanctl %s: %w: %s%s", args[0], err, lastLines(string(out), 3), lastLines(stderr.String(), 3))
	}
	return out, nil
}

// stopGrace is how long charon gets to remove its TUN device and routes
// after SIGTERM.
const stopGrace = 5 * time.Second

// stop ends charon and removes what newInstance created; it may be called
// more than once.
func (i *instance) stop() error {
	i.stopOnce.Do(func() {
		var errs []error
		if i.cmd != nil && i.cmd.Process != nil {
			_ = i.cmd.Process.Signal(syscall.SIGTERM) // fails harmlessly if it already exited
			select {
			case <-i.exited:
			case <-time.After(stopGrace):
				_ = i.cmd.Process.Kill()
				<-i.exited
			}
		}
		if i.release != nil {
			i.release()
		}
		// After charon: its routes use the address as their source.
		if i.undoAddr != nil {
			if err := i.undoAddr(); err != nil {
				errs = append(errs, err)
			}
		}
		if i.ownDir {
			if err := os.RemoveAll(i.dir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", i.dir, err))
			}
		}
		i.stopErr = errors.Join(errs...)
	})
	return i.stopErr
}

// logTail is the end of charon's log and output, for error messages.
func (i *instance) logTail() string {
	var b strings.Builder
	for _, f := range []string{charonLogFile, charonOutFile} {
		data, err := os.ReadFile(i.path(f))
		if err != nil || len(strings.TrimSpace(string(data))) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n--- %s (end) ---\n%s", f, lastLines(string(data), 15))
	}
	return b.String()
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
