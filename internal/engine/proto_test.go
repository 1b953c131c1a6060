package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func frame(body string) []byte {
	b := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	copy(b[4:], body)
	return b
}

func TestMsgRoundTrip(t *testing.T) {
	msgs := []*Msg{
		{Type: MsgHello, Hello: &Hello{Proto: ProtoMagic, Version: ProtoVersion}},
		{Type: MsgSetup, Setup: &Setup{Test: TCPRR, Flows: 32, ReqSize: 1, RespSize: 1, MsgSize: 1, TimeoutMillis: 5000}},
		{Type: MsgReady, Ready: &Ready{Port: 40000}},
		{Type: MsgStart},
		{Type: MsgStats, Stats: &SrvStats{WallMicros: 10, RxBytes: 1 << 40, Sessions: 2}},
		{Type: MsgError, Error: "boom"},
	}
	var buf bytes.Buffer
	for _, m := range msgs {
		if err := WriteMsg(&buf, m); err != nil {
			t.Fatalf("write %s: %v", m.Type, err)
		}
	}
	for _, want := range msgs {
		got, err := ReadMsg(&buf)
		if err != nil {
			t.Fatalf("read %s: %v", want.Type, err)
		}
		if got.Type != want.Type {
			t.Fatalf("got type %s, want %s", got.Type, want.Type)
		}
	}
	if _, err := ReadMsg(&buf); err != io.EOF {
		t.Fatalf("after the last message: got %v, want io.EOF", err)
	}
	if got := (&Msg{Type: MsgStats, Stats: &SrvStats{RxBytes: 1 << 40}}); got.Stats.RxBytes != 1<<40 {
		t.Fatal("unreachable")
	}
}

func TestReadMsgErrors(t *testing.T) {
	big := make([]byte, 4)
	binary.BigEndian.PutUint32(big, MaxFrame+1)
	tests := []struct {
		name    string
		in      []byte
		wantErr error
		wantSub string
	}{
		{"truncated header", []byte{0, 0}, ErrTruncated, ""},
		{"truncated body", frame(`{"type":"start"}`)[:10], ErrTruncated, "got 6 of 16 bytes"},
		{"oversized", append(big, 'x'), ErrFrameTooLarge, ""},
		{"empty", frame(""), nil, "empty control message"},
		{"garbage json", frame("\x00\x01garbage"), nil, "malformed control message"},
		{"no type", frame(`{}`), nil, "no type"},
		{"unknown type", frame(`{"type":"launch"}`), nil, `unknown control message type "launch"`},
		{"hello without body", frame(`{"type":"hello"}`), nil, "hello without body"},
		{"setup without body", frame(`{"type":"setup"}`), nil, "setup without body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadMsg(bytes.NewReader(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, want %v", err, tt.wantErr)
			}
			if tt.wantSub != "" && !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("got %q, want it to contain %q", err, tt.wantSub)
			}
		})
	}
}

func TestCheckHello(t *testing.T) {
	if err := CheckHello(&Hello{Proto: ProtoMagic, Version: ProtoVersion}); err != nil {
		t.Fatalf("own hello rejected: %v", err)
	}
	err := CheckHello(&Hello{Proto: ProtoMagic, Version: ProtoVersion + 1})
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "same cnibench version") {
		t.Fatalf("version mismatch: got %v", err)
	}
	if err := CheckHello(&Hello{Proto: "iperf3", Version: ProtoVersion}); err == nil {
		t.Fatal("foreign protocol accepted")
	}
}

func TestValidateSetup(t *testing.T) {
	ok := Setup{Test: TCPRR, Flows: 1, ReqSize: 1, RespSize: 1, MsgSize: 1}
	if err := ValidateSetup(&ok); err != nil {
		t.Fatalf("valid setup rejected: %v", err)
	}
	bad := []func(*Setup){
		func(s *Setup) { s.Test = "x" },
		func(s *Setup) { s.Flows = 0 },
		func(s *Setup) { s.Flows = MaxFlows + 1 },
		func(s *Setup) { s.ReqSize = MaxMsgSize + 1 },
		func(s *Setup) { s.RespSize = 0 },
		func(s *Setup) { s.MsgSize = -1 },
		func(s *Setup) { s.HTTPBody = MaxHTTPBody + 1 },
		func(s *Setup) { s.TimeoutMillis = -1 },
	}
	for i, mut := range bad {
		s := ok
		mut(&s)
		if err := ValidateSetup(&s); err == nil {
			t.Errorf("case %d: invalid setup %+v accepted", i, s)
		}
	}
}

// FuzzReadMsg: no input may panic the decoder or make it allocate beyond
// MaxFrame; anything it accepts must re-encode.
func FuzzReadMsg(f *testing.F) {
	f.Add(frame(`{"type":"hello","hello":{"proto":"cnibench","version":1}}`))
	f.Add(frame(`{"type":"hello","hello":{"proto":"cnibench","version":2,"token":"s3cret","window_ms":1500,"reserve":{"test":"tcp_rr","flows":8,"req_size":1,"resp_size":1,"msg_size":1}}}`))
	f.Add(frame(`{"type":"error","error":"flows 9 exceed","code":"refused"}`))
	f.Add(frame(`{"type":"stats","stats":{"wall_us":1}}`))
	f.Add(frame(`{"type":"setup","setup":{"test":"tcp_rr","flows":1}}`))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 3, '{', '}', '}'})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadMsg(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteMsg(&buf, m); err != nil {
			t.Fatalf("accepted message does not re-encode: %v", err)
		}
		if _, err := ReadMsg(&buf); err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
	})
}

func TestHelloKeepsTokenOutOfLogs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("hello", "hello", Hello{Proto: ProtoMagic, Version: ProtoVersion, Token: "s3cret-token"})
	if strings.Contains(buf.String(), "s3cret") {
		t.Fatalf("token logged: %s", buf.String())
	}
}
