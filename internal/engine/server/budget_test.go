package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/engine"
)

func TestBudget(t *testing.T) {
	b := budget{lim: Limits{MaxFlows: 64, MaxBufferBytes: 16 << 20}}
	tests := []struct {
		name      string
		have, ask cost
		wantErr   string // substring; "" = granted
	}{
		{"fits", cost{}, cost{32, 1 << 20}, ""},
		{"grows within the rest", cost{}, cost{32, 1 << 20}, ""},
		{"flows over", cost{}, cost{8, 0}, "flows 8 exceed the server's free budget of 0 (cnibench serve --max-flows)"},
		{"a holder may grow into what it holds", cost{32, 1 << 20}, cost{32, 2 << 20}, ""},
		{"memory over", cost{}, cost{0, 20 << 20}, "buffers of 20M exceed the server's free budget of 13M (cnibench serve --max-buffer-mem)"},
	}
	for _, tc := range tests {
		got, err := b.grow(tc.have, tc.ask)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Fatalf("%s: refused: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Fatalf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		case tc.wantErr != "" && got != tc.have:
			t.Fatalf("%s: a refusal changed the holding to %+v", tc.name, got)
		}
		var rf *refusal
		if err != nil && (!errors.As(err, &rf) || rf.code != engine.CodeRefused) {
			t.Fatalf("%s: %v is not a refusal", tc.name, err)
		}
	}
	b.release(cost{32, 1 << 20})
	b.release(cost{32, 2 << 20})
	if u := b.inUse(); u != (cost{}) {
		t.Fatalf("in use after release: %+v", u)
	}
}

func TestSetupCost(t *testing.T) {
	tests := []struct {
		s    engine.Setup
		want cost
	}{
		{engine.Setup{Test: engine.TCPStream, Flows: 4, MsgSize: 128 << 10}, cost{4, 4 * 256 << 10}},
		{engine.Setup{Test: engine.TCPStream, Flows: 1, MsgSize: 1 << 20}, cost{1, 1 << 20}},
		{engine.Setup{Test: engine.TCPRR, Flows: 256, ReqSize: 1 << 20, RespSize: 1 << 20}, cost{256, 256 * 2 << 20}},
		{engine.Setup{Test: engine.HTTP, Flows: 1000, HTTPBody: 1024}, cost{1000, 1024 + 1000*8<<10}},
	}
	for _, tc := range tests {
		if got := setupCost(&tc.s); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.s.Test, got, tc.want)
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{MaxFlows: 8}.withDefaults()
	d := DefaultLimits()
	if got.MaxFlows != 8 || got.MaxSessions != d.MaxSessions || got.IdleTimeout != d.IdleTimeout || got.MaxBufferBytes != d.MaxBufferBytes {
		t.Fatalf("withDefaults: %+v", got)
	}
	// Go crashes at 10 000 threads: the default flow budget (one thread
	// per flow) must stay far below.
	if d.MaxFlows > 4096 {
		t.Fatalf("default flow budget %d too close to Go's thread limit", d.MaxFlows)
	}
}

func TestCheckToken(t *testing.T) {
	tests := []struct {
		want, got string
		err       string
	}{
		{"", "", ""},
		{"", "anything", ""},
		{"s3cret", "s3cret", ""},
		{"s3cret", "", "requires a token"},
		{"s3cret", "s3cre", "wrong token"},
		{"s3cret", "s3cret2", "wrong token"},
	}
	for _, tc := range tests {
		err := checkToken(tc.want, tc.got)
		if tc.err == "" {
			if err != nil {
				t.Errorf("checkToken(%q, %q): %v", tc.want, tc.got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("checkToken(%q, %q): got %v, want %q", tc.want, tc.got, err, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), tc.want) {
			t.Errorf("the refusal echoes the token: %v", err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[int64]string{256 << 20: "256M", 13 << 20: "13M", 3 << 10: "3K", 100: "100 bytes", 1<<20 + 1: "1.0M"} {
		if got := formatBytes(in); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

// FuzzAdmission: whatever a peer sends as its hello, the server's checks
// (protocol, token, reservation, budget) never panic, and a reservation
// they accept stays within the per-session limits.
func FuzzAdmission(f *testing.F) {
	f.Add([]byte(`{"type":"hello","hello":{"proto":"cnibench","version":2,"token":"t","window_ms":1500,"reserve":{"test":"tcp_rr","flows":8,"req_size":1,"resp_size":1,"msg_size":1}}}`))
	f.Add([]byte(`{"type":"hello","hello":{"proto":"cnibench","version":2,"reserve":{"test":"http","flows":10000,"req_size":1,"resp_size":1,"msg_size":1,"http_body":67108864}}}`))
	f.Add([]byte(`{"type":"hello","hello":{"proto":"cnibench","version":2,"window_ms":-1}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := engine.DecodeMsg(body)
		if err != nil || m.Type != engine.MsgHello {
			return
		}
		if engine.CheckHello(m.Hello) != nil || checkToken("t", m.Hello.Token) != nil || m.Hello.Reserve == nil {
			return
		}
		if engine.ValidateSetup(m.Hello.Reserve) != nil {
			return
		}
		c := setupCost(m.Hello.Reserve)
		if c.flows < 1 || c.flows > engine.MaxHTTPFlows || c.bytes < 0 || c.bytes > int64(engine.MaxHTTPFlows)*(2*engine.MaxMsgSize+256<<10)+engine.MaxHTTPBody {
			t.Fatalf("cost %+v of a valid reservation out of bounds", c)
		}
		b := budget{lim: DefaultLimits()}
		held, err := b.grow(cost{}, c)
		if err == nil {
			b.release(held)
		}
		if u := b.inUse(); u != (cost{}) {
			t.Fatalf("budget not returned: %+v", u)
		}
	})
}
