package engine

import (
	"errors"
	"testing"
)

func TestSvcPreamble(t *testing.T) {
	for _, p := range []SvcPreamble{{ReqSize: 1, RespSize: 1}, {OneShot: true, ReqSize: 100, RespSize: MaxMsgSize}, {Sink: true, ReqSize: 128 << 10, RespSize: 1}} {
		b, err := EncodeSvcPreamble("secret", p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != SvcPreambleLen {
			t.Fatalf("%d bytes, want %d", len(b), SvcPreambleLen)
		}
		got, err := DecodeSvcPreamble("secret", b)
		if err != nil || got != p {
			t.Errorf("round trip %+v: %+v, %v", p, got, err)
		}
		if _, err := DecodeSvcPreamble("other", b); !errors.Is(err, errSvcMAC) {
			t.Errorf("wrong token: %v", err)
		}
		if _, err := DecodeSvcPreamble("", b); !errors.Is(err, errSvcMAC) {
			t.Errorf("server without token: %v", err)
		}
		for i := 4; i < len(b); i++ { // any changed byte after the magic breaks the MAC (or the version)
			c := append([]byte(nil), b...)
			c[i] ^= 0x40
			if _, err := DecodeSvcPreamble("secret", c); err == nil {
				t.Errorf("byte %d changed: accepted", i)
			}
		}
		b2, _ := EncodeSvcPreamble("secret", p)
		if string(b2) == string(b) {
			t.Error("two preambles are equal: no nonce")
		}
	}
	if _, err := DecodeSvcPreamble("secret", []byte("GET / HTTP/1.1\r\n")); !errors.Is(err, errSvcMagic) {
		t.Errorf("HTTP request: %v", err)
	}
	if _, err := EncodeSvcPreamble("", SvcPreamble{ReqSize: 1, RespSize: 1}); err == nil {
		t.Error("no token: encoded")
	}
	if _, err := EncodeSvcPreamble("s", SvcPreamble{ReqSize: 0, RespSize: 1}); !errors.Is(err, errSvcSize) {
		t.Errorf("size 0: %v", err)
	}
}

func FuzzSvcPreamble(f *testing.F) {
	b, _ := EncodeSvcPreamble("secret", SvcPreamble{ReqSize: 1, RespSize: 1})
	f.Add(b)
	f.Add([]byte("cnbS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeSvcPreamble("secret", b)
		if err == nil && (p.ReqSize < 1 || p.ReqSize > MaxMsgSize || p.RespSize < 1 || p.RespSize > MaxMsgSize) {
			t.Fatalf("accepted sizes %+v", p)
		}
	})
}
