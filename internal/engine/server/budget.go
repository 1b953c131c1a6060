package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

// Limits bound what the server gives its peers. The zero value of a field
// means its default (DefaultLimits); docs/security.md explains each.
type Limits struct {
	// MaxSessions caps sessions past their hello.
	MaxSessions int
	// MaxPending caps connections that have not sent their hello yet; when
	// full, the oldest is closed to make room.
	MaxPending int
	// MaxFlows is the global flow budget: every flow of a tcp or udp test
	// is an OS thread on the server, an http flow a connection.
	MaxFlows int
	// MaxBufferBytes is the global budget of data-plane buffer memory.
	MaxBufferBytes int64
	// HelloTimeout bounds the time from accept to a complete hello.
	HelloTimeout time.Duration
	// IdleTimeout bounds silence on a control connection between messages
	// (beyond the window the client declared) and on a data connection.
	IdleTimeout time.Duration
	// MaxWindow caps the silence a client may declare in its hello.
	MaxWindow time.Duration
	// Token, when set, must be sent by every client in its hello.
	Token string
}

// DefaultLimits returns the server's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxSessions:    64,
		MaxPending:     256,
		MaxFlows:       1024,
		MaxBufferBytes: 256 << 20,
		HelloTimeout:   10 * time.Second,
		IdleTimeout:    30 * time.Second,
		MaxWindow:      25 * time.Hour,
	}
}

// withDefaults fills zero fields with DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxSessions <= 0 {
		l.MaxSessions = d.MaxSessions
	}
	if l.MaxPending <= 0 {
		l.MaxPending = d.MaxPending
	}
	if l.MaxFlows <= 0 {
		l.MaxFlows = d.MaxFlows
	}
	if l.MaxBufferBytes <= 0 {
		l.MaxBufferBytes = d.MaxBufferBytes
	}
	if l.HelloTimeout <= 0 {
		l.HelloTimeout = d.HelloTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxWindow <= 0 {
		l.MaxWindow = d.MaxWindow
	}
	return l
}

// refusal is an error the session reports to the client with a code.
type refusal struct {
	code, msg string
}

func (r *refusal) Error() string { return r.msg }

func refusef(code, format string, a ...any) *refusal {
	return &refusal{code: code, msg: fmt.Sprintf(format, a...)}
}

// cost is what one test takes from the server's budget.
type cost struct {
	flows int
	bytes int64
}

// setupCost estimates the flows and the buffer memory s needs on the
// server (user-space buffers; kernel socket buffers are bounded by the
// kernel's own limits).
func setupCost(s *engine.Setup) cost {
	f := int64(s.Flows)
	switch s.Test {
	case engine.TCPStream:
		return cost{s.Flows, f * int64(max(s.MsgSize, 256<<10))}
	case engine.TCPRR, engine.TCPCRR:
		return cost{s.Flows, f * int64(s.ReqSize+s.RespSize)}
	case engine.UDPStream:
		return cost{s.Flows, f * int64(64<<10+s.MsgSize)}
	case engine.UDPRR:
		return cost{s.Flows, f * int64(64<<10+s.RespSize)}
	case engine.HTTP:
		// One shared body, about 8 KiB of bufio buffers per connection.
		return cost{s.Flows, int64(s.HTTPBody) + f*(8<<10)}
	}
	return cost{s.Flows, 0}
}

// budget is the server's global flow and memory budget.
type budget struct {
	mu    sync.Mutex
	lim   Limits
	flows int
	bytes int64
}

// grow takes more from the budget, from have to want; it refuses when
// the rest of the budget cannot cover the difference. It returns the
// session's new holding.
func (b *budget) grow(have, want cost) (cost, error) {
	want.flows = max(want.flows, have.flows)
	want.bytes = max(want.bytes, have.bytes)
	df, db := want.flows-have.flows, want.bytes-have.bytes
	b.mu.Lock()
	defer b.mu.Unlock()
	if free := b.lim.MaxFlows - b.flows; df > free {
		return have, refusef(engine.CodeRefused, "flows %d exceed the server's free budget of %d (cnibench serve --max-flows)", want.flows, free+have.flows)
	}
	if free := b.lim.MaxBufferBytes - b.bytes; db > free {
		return have, refusef(engine.CodeRefused, "buffers of %s exceed the server's free budget of %s (cnibench serve --max-buffer-mem)", formatBytes(want.bytes), formatBytes(free+have.bytes))
	}
	b.flows += df
	b.bytes += db
	return want, nil
}

// release returns a session's holding.
func (b *budget) release(c cost) {
	b.mu.Lock()
	b.flows -= c.flows
	b.bytes -= c.bytes
	b.mu.Unlock()
}

// inUse returns the budget taken now.
func (b *budget) inUse() cost {
	b.mu.Lock()
	defer b.mu.Unlock()
	return cost{b.flows, b.bytes}
}

// formatBytes prints n in the largest binary unit that divides it, as
// --max-buffer-mem accepts it back.
func formatBytes(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%s", n/u.v, u.s)
		}
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
