package lbnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
)

// Refusal probe: connects from the refused client to VIP:Port.
const (
	// refusalConcurrency connects run at once, each starting one connect
	// every refusalTimeout: 16 attempts a second whatever their outcome, so
	// the refused client offers the same load with the firewall on or off
	// (a connect that succeeds does not make the next one come sooner).
	refusalConcurrency = 4
	// refusalTimeout ends a connect that got no answer. It is below TCP's
	// initial retransmission timeout (1 s), so every attempt is exactly one
	// SYN and the firewall's drops can be compared with the attempts.
	refusalTimeout = 250 * time.Millisecond
)

// RefusalProbe connects from ClientFW to VIP:Port for d (or until ctx
// ends), 16 connects a second (refusalConcurrency at a time, each given
// refusalTimeout), and returns what happened to them and how much the
// firewall's drop counter rose meanwhile. With the firewall on every
// attempt should time out with one drop each (connects cut short by the
// probe's end are not attempts, but their SYN may be dropped too); with it
// off they connect (or are reset if no backend listens). Do not Configure
// another LB mode or transport during the probe (its counters would
// restart).
func (l *LB) RefusalProbe(ctx context.Context, d time.Duration) (RefusalResult, error) {
	before, err := l.FirewallDrops()
	if err != nil {
		return RefusalResult{}, fmt.Errorf("refusal probe: %w", err)
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	to := netip.AddrPortFrom(VIP, Port)
	var (
		mu   sync.Mutex
		res  RefusalResult
		errs []error
		wg   sync.WaitGroup
	)
	for range refusalConcurrency {
		wg.Go(func() {
			for pctx.Err() == nil {
				next := time.Now().Add(refusalTimeout)
				outcome, err := l.refusedConnect(pctx, to)
				mu.Lock()
				switch {
				case err != nil:
					if len(errs) < 3 {
						errs = append(errs, err)
					}
				case outcome == "":
					// cut short by the probe's end: not an attempt
				default:
					res.Attempts++
					switch outcome {
					case "connected":
						res.Connected++
					case "reset":
						res.Reset++
					case "timeout":
						res.TimedOut++
					}
				}
				mu.Unlock()
				if err != nil {
					return
				}
				select {
				case <-pctx.Done():
				case <-time.After(time.Until(next)):
				}
			}
		})
	}
	wg.Wait()
	res.Duration = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("refusal probe from %s: %w", l.clientFW.Name, err)
	}
	after, err := l.FirewallDrops()
	if err != nil {
		return res, fmt.Errorf("refusal probe: %w", err)
	}
	if after < before {
		return res, errors.New("refusal probe: the firewall's counter went backwards (mode changed during the probe?)")
	}
	res.Drops = after - before
	return res, nil
}

// refusedConnect makes one connect from ClientFW to to and classifies it:
// "connected", "reset" (refused: something answered), "timeout" (no
// answer), or "" when ctx ended first. Other failures are errors.
func (l *LB) refusedConnect(ctx context.Context, to netip.AddrPort) (string, error) {
	var c net.Conn
	var derr error
	start := time.Now()
	err := l.clientFW.Do(func() error {
		dctx, cancel := context.WithTimeout(ctx, refusalTimeout)
		defer cancel()
		var d net.Dialer
		c, derr = d.DialContext(dctx, "tcp4", to.String())
		return nil
	})
	if err != nil {
		return "", err
	}
	switch {
	case derr == nil:
		c.Close()
		return "connected", nil
	case errors.Is(derr, syscall.ECONNREFUSED):
		return "reset", nil
	case ctx.Err() != nil:
		return "", nil
	}
	// net reports a deadline as os.ErrDeadlineExceeded ("i/o timeout"), a
	// net.Error whose Timeout() is true. Only the connect's own deadline
	// makes it a timeout: the probe's end (ctx's deadline) can fire the
	// socket's deadline before ctx reports it.
	var ne net.Error
	if errors.Is(derr, os.ErrDeadlineExceeded) || errors.Is(derr, context.DeadlineExceeded) ||
		errors.Is(derr, syscall.ETIMEDOUT) || (errors.As(derr, &ne) && ne.Timeout()) {
		if time.Since(start) < refusalTimeout {
			return "", nil
		}
		return "timeout", nil
	}
	return "", fmt.Errorf("connect to %v: %w", to, derr)
}
