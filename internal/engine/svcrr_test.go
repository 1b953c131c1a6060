package engine

import (
	"errors"
	"testing"
)

func TestSvcPreamble(t *testing.T) {
	for _, p := range []svcPreamble{{ReqSize: 1, RespSize: 1}, {OneShot: true, ReqSize: 100, RespSize: MaxMsgSize}, {Sink: true, ReqSize: 128 << 10, RespSize: 1}} {
		b, err := encodeSvcPreamble("secret", p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != svcPreambleLen {
			t.Fatalf("%d bytes, want %d", len(b), svcPreambleLen)
		}
		got, err := decodeSvcPreamble("secret", b)
		if err != nil || got != p {
			t.Errorf("round trip %+v: %+v, %v", p, got, err)
		}
		if _, err := decodeSvcPreamble("other", b); !errors.Is(err, errSvcMAC) {
			t.Errorf("wrong token: %v", err)
		}
		if _, err := decodeSvcPreamble("", b); !errors.Is(err, errSvcMAC) {
			t.Errorf("server without token: %v", err)
		}
		for i := 4; i < len(b); i++ { // any changed byte after the magic breaks the MAC (or the version)
			c := append([]byte(nil), b...)
			c[i] ^= 0x40
			if _, err := decodeSvcPreamble("secret", c); err == nil {
				t.Errorf("byte %d changed: accepted", i)
			}
		}
		b2, _ := encodeSvcPreamble("secret", p)
		if string(b2) == string(b) {
			t.Error("two preambles are equal: no nonce")
		}
	}
	if _, err := decodeSvcPreamble("secret", []byte("GET / HTTP/1.1\r\n")); !errors.Is(err, errSvcMagic) {
		t.Errorf("HTTP request: %v", err)
	}
	if _, err := encodeSvcPreamble("", svcPreamble{ReqSize: 1, RespSize: 1}); err == nil {
		t.Error("no token: encoded")
	}
	if _, err := encodeSvcPreamble("s", svcPreamble{ReqSize: 0, RespSize: 1}); !errors.Is(err, errSvcSize) {
		t.Errorf("size 0: %v", err)
	}
}

func FuzzSvcPreamble(f *testing.F) {
	b, _ := encodeSvcPreamble("secret", svcPreamble{ReqSize: 1, RespSize: 1})
	f.Add(b)
	f.Add([]byte("cnbS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeSvcPreamble("secret", b)
		if err == nil && (p.ReqSize < 1 || p.ReqSize > MaxMsgSize || p.RespSize < 1 || p.RespSize > MaxMsgSize) {
			t.Fatalf("accepted sizes %+v", p)
		}
	})
}
