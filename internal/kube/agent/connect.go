package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Connect is the outcome of TCP connection attempts to one target
// (`agent connect`): whether a NetworkPolicy lets them through.
type Connect struct {
	Schema string `json:"schema"`
	Target string `json:"target"`
	// Addr is the address connected to (Target's host resolved once).
	Addr      string `json:"addr,omitempty"`
	TimeoutMS int64  `json:"timeout_ms"`
	// Attempts were made (fewer than asked when interrupted or when the
	// name did not resolve); Connected succeeded, Refused got a reset,
	// TimedOut got no answer within the timeout (what a policy that
	// drops looks like).
	Attempts  int `json:"attempts"`
	Connected int `json:"connected"`
	Refused   int `json:"refused"`
	TimedOut  int `json:"timed_out"`
	// Errors are the first MaxConnectErrors distinct error messages.
	Errors []string `json:"errors"`
	// RTTMicros are the successful connects' durations (SYN to
	// established), in microseconds.
	RTTMicros []float64 `json:"rtt_us"`
}

// MaxConnectErrors is how many distinct errors a Connect keeps.
const MaxConnectErrors = 5

// RunConnect makes count TCP connections to target (HOST:PORT) one after the
// other, each bounded by timeout, and closes each at once. The host is
// resolved once, first. It stops early when ctx ends. The outcome is the
// report: nothing here fails.
func RunConnect(ctx context.Context, target string, timeout time.Duration, count int) Connect {
	r := Connect{Schema: SchemaConnect, Target: target, TimeoutMS: timeout.Milliseconds(),
		Errors: []string{}, RTTMicros: []float64{}}
	addErr := func(err error) {
		msg := err.Error()
		for _, e := range r.Errors {
			if e == msg {
				return
			}
		}
		if len(r.Errors) < MaxConnectErrors {
			r.Errors = append(r.Errors, msg)
		}
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		addErr(err)
		return r
	}
	addr, err := resolve(ctx, host, timeout)
	if err != nil {
		addErr(err)
		return r
	}
	r.Addr = net.JoinHostPort(addr.String(), port)
	d := net.Dialer{Timeout: timeout}
	for i := 0; i < count && ctx.Err() == nil; i++ {
		r.Attempts++
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", r.Addr)
		rtt := time.Since(t0)
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				r.Refused++
			case errors.As(err, &ne) && ne.Timeout():
				r.TimedOut++
			}
			addErr(err)
			continue
		}
		c.Close()
		r.Connected++
		r.RTTMicros = append(r.RTTMicros, float64(rtt.Nanoseconds())/1e3)
	}
	return r
}

// resolve returns host's first address (host itself when it is one).
func resolve(ctx context.Context, host string, timeout time.Duration) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	if len(addrs) == 0 {
		return netip.Addr{}, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return addrs[0].Unmap(), nil
}
