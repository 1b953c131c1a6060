package engine

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Service mode (issue 11): tcp_rr and tcp_crr against a fixed port that any
// of several servers behind one service address (a VIP with backends on
// several hosts) may answer. The ordinary data planes belong to one
// session on one server (setup → ready{port}); a connection that a load
// balancer sends to another server would find no session there. Service
// mode has no session: every data connection opens with a preamble that
// carries the request and response sizes and proves, with an HMAC of the
// shared token, that the client was given the run's secret, so any server
// started with the same token serves it without state.
//
// Preamble (SvcPreambleLen bytes, big endian):
//
//	magic "cnbS" | version u8 | flags u8 | reserved u16 |
//	request size u32 | response size u32 | nonce [16] | mac [16]
//
// mac is the first 16 bytes of HMAC-SHA256(token, everything before it).
// Flag svcOneShot asks the server to close after one response (tcp_crr,
// whose transaction includes the teardown, the server closing first);
// flag svcSink asks it to read and discard everything until the client
// closes (tcp_stream; the sizes are then the client's write size, and
// no response).
// The nonce makes preambles of different runs differ; a preamble replayed
// by someone who captured it gets the same sizes served, no more.
const (
	svcMagic       = "cnbS"
	svcVersion     = 1
	SvcPreambleLen = 4 + 1 + 1 + 2 + 4 + 4 + 16 + 16
	svcOneShot     = 1 << 0
	svcSink        = 1 << 1
	svcMACLen      = 16
)

// SvcPreamble is a decoded preamble.
type SvcPreamble struct {
	OneShot  bool
	Sink     bool
	ReqSize  int
	RespSize int
}

// Errors of preamble verification.
var (
	errSvcMagic   = errors.New("service preamble: not a cnibench service connection")
	errSvcVersion = errors.New("service preamble: unknown version")
	errSvcMAC     = errors.New("service preamble: wrong token")
	errSvcSize    = errors.New("service preamble: request or response size out of range")
)

// EncodeSvcPreamble builds the preamble for p, authenticated with token,
// with a random nonce.
func EncodeSvcPreamble(token string, p SvcPreamble) ([]byte, error) {
	if token == "" {
		return nil, errors.New("service mode needs a token (--token or " + TokenEnv + ")")
	}
	if p.ReqSize < 1 || p.ReqSize > MaxMsgSize || p.RespSize < 1 || p.RespSize > MaxMsgSize {
		return nil, errSvcSize
	}
	b := make([]byte, 0, SvcPreambleLen)
	b = append(b, svcMagic...)
	flags := byte(0)
	if p.OneShot {
		flags |= svcOneShot
	}
	if p.Sink {
		flags |= svcSink
	}
	b = append(b, svcVersion, flags, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(p.ReqSize))
	b = binary.BigEndian.AppendUint32(b, uint32(p.RespSize))
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("service preamble nonce: %w", err)
	}
	b = append(b, nonce[:]...)
	return append(b, svcMAC(token, b)...), nil
}

func svcMAC(token string, msg []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write(msg)
	return m.Sum(nil)[:svcMACLen]
}

// DecodeSvcPreamble verifies a preamble of exactly SvcPreambleLen bytes
// against token and returns what it asks for.
func DecodeSvcPreamble(token string, b []byte) (SvcPreamble, error) {
	if len(b) != SvcPreambleLen || string(b[:4]) != svcMagic {
		return SvcPreamble{}, errSvcMagic
	}
	if b[4] != svcVersion {
		return SvcPreamble{}, errSvcVersion
	}
	body, mac := b[:SvcPreambleLen-svcMACLen], b[SvcPreambleLen-svcMACLen:]
	if token == "" || !hmac.Equal(mac, svcMAC(token, body)) {
		return SvcPreamble{}, errSvcMAC
	}
	p := SvcPreamble{
		OneShot:  b[5]&svcOneShot != 0,
		Sink:     b[5]&svcSink != 0,
		ReqSize:  int(binary.BigEndian.Uint32(b[8:12])),
		RespSize: int(binary.BigEndian.Uint32(b[12:16])),
	}
	if p.ReqSize < 1 || p.ReqSize > MaxMsgSize || p.RespSize < 1 || p.RespSize > MaxMsgSize {
		return SvcPreamble{}, errSvcSize
	}
	return p, nil
}
