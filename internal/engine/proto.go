package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/cnibench/cnibench/internal/engine/hoststat"
)

// The control protocol: every message is a 4-byte big-endian length
// followed by that many bytes of JSON (a Msg). The first message on a
// connection is a "hello" from the client carrying ProtoVersion; the server
// answers "hello" or "error". Then the client drives one test at a time:
//
//	setup → ready{port}   start → started   stop → stats   teardown → done
//
// and may repeat the cycle. Either side closing the connection ends every
// test of that session on the server.
const (
	ProtoMagic = "cnibench"
	// ProtoVersion 2: hello carries the token, the declared window and
	// the reservation; errors carry a code.
	ProtoVersion = 2
	// MaxFrame bounds a control message; larger frames are rejected
	// before any allocation.
	MaxFrame = 64 << 10
)

// Message types.
const (
	MsgHello    = "hello"
	MsgSetup    = "setup"
	MsgReady    = "ready"
	MsgStart    = "start"
	MsgStarted  = "started"
	MsgStop     = "stop"
	MsgStats    = "stats"
	MsgTeardown = "teardown"
	MsgDone     = "done"
	MsgError    = "error"
)

// Protocol errors.
var (
	ErrFrameTooLarge = errors.New("control message too large")
	ErrTruncated     = errors.New("control message truncated")
	ErrVersion       = errors.New("protocol version mismatch")
)

// Msg is one control message. Only the field matching Type is set.
type Msg struct {
	Type  string    `json:"type"`
	Hello *Hello    `json:"hello,omitempty"`
	Setup *Setup    `json:"setup,omitempty"`
	Ready *Ready    `json:"ready,omitempty"`
	Stats *SrvStats `json:"stats,omitempty"`
	Error string    `json:"error,omitempty"`
	// Code classifies an error: CodeRefused (over a server limit) or
	// CodeAuth (token missing or wrong).
	Code string `json:"code,omitempty"`
}

// Hello opens a session.
type Hello struct {
	Proto   string `json:"proto"`
	Version int    `json:"version"`
	Tool    string `json:"tool,omitempty"`
	// Token is the shared secret (--token, CNIBENCH_TOKEN); a server with a
	// token refuses hellos without it. Never logged.
	Token string `json:"token,omitempty"`
	// WindowMillis is the longest silence the client intends on the
	// control connection while a test is set up (warm-up plus measured
	// window): the server's idle timeout starts after it.
	WindowMillis int64 `json:"window_ms,omitempty"`
	// Reserve is the largest test the session will set up: the server
	// takes its flows and buffers from its budget at once, so a run is
	// refused at its start rather than half-way, and keeps them until the
	// session ends.
	Reserve *Setup `json:"reserve,omitempty"`
}

// LogValue keeps the token out of logs.
func (h Hello) LogValue() slog.Value {
	return slog.GroupValue(slog.String("proto", h.Proto), slog.Int("version", h.Version),
		slog.String("tool", h.Tool), slog.Bool("token", h.Token != ""), slog.Int64("window_ms", h.WindowMillis))
}

// Setup asks the server to prepare the data plane of one test.
type Setup struct {
	Test          string `json:"test"`
	Flows         int    `json:"flows"`
	ReqSize       int    `json:"req_size"`
	RespSize      int    `json:"resp_size"`
	MsgSize       int    `json:"msg_size"`
	HTTPBody      int    `json:"http_body"`
	TimeoutMillis int64  `json:"timeout_ms"`
}

// Ready tells the client where the data plane listens. Cookie identifies
// the session on its data connections and datagrams: the server accepts
// data traffic only from the control peer's address carrying it.
type Ready struct {
	Port   int    `json:"port"`
	Cookie uint64 `json:"cookie,omitempty"`
}

// SrvStats is the server's view of one measured window.
type SrvStats struct {
	WallMicros   int64  `json:"wall_us"`
	CPUUserMicro int64  `json:"cpu_user_us"`
	CPUSysMicro  int64  `json:"cpu_sys_us"`
	RxBytes      uint64 `json:"rx_bytes"`
	RxDatagrams  uint64 `json:"rx_datagrams"`
	Trans        uint64 `json:"trans"`
	// Sessions is the largest number of sessions the server had running
	// at once during the window: above 1, its CPU includes other tests.
	Sessions int `json:"sessions"`
	// CPUError says why the server's own CPU could not be read (the CPU
	// fields are then not measured, not zero).
	CPUError string `json:"cpu_error,omitempty"`
	// HostStat is the server host's /proc/stat delta over the window, or
	// nil with HostError saying why.
	HostStat  *hoststat.ProcStat `json:"host_stat,omitempty"`
	HostError string             `json:"host_error,omitempty"`
	// Cgroup is the server's cgroup's CPU over the window (every process
	// of its cgroup), or nil with CgroupError saying why: the run's own
	// CPU, which foreign_cpu_pct leaves out.
	Cgroup      *hoststat.CgroupStat `json:"cgroup,omitempty"`
	CgroupError string               `json:"cgroup_error,omitempty"`
	// OthersMicros is other programs' CPU on the server's host over the
	// window, counted process by process (hoststat.Others), or nil where the
	// server cannot see the host's processes (a pod).
	OthersMicros *int64 `json:"others_us,omitempty"`
	// BootID identifies the server's kernel: the same as the client's
	// means both ends share one host (their host CPU is one figure).
	BootID string `json:"boot_id,omitempty"`
	// IPFrag is the server network namespace's IP fragmentation and
	// reassembly counters' delta, or nil with IPFragError saying why.
	IPFrag      *hoststat.IPFrag `json:"ip_frag,omitempty"`
	IPFragError string           `json:"ip_frag_error,omitempty"`
	// UDPRecv is udp_stream's exact receive account (since setup).
	UDPRecv *UDPRecv `json:"udp_recv,omitempty"`
}

// WriteMsg frames and writes m.
func WriteMsg(w io.Writer, m *Msg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadMsg reads one framed message. It returns io.EOF only when the peer
// closed the connection cleanly between messages.
func ReadMsg(r io.Reader) (*Msg, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %d of 4 header bytes", ErrTruncated, 0)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes (max %d)", ErrFrameTooLarge, n, MaxFrame)
	}
	if n == 0 {
		return nil, fmt.Errorf("empty control message")
	}
	body := make([]byte, n)
	if got, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: got %d of %d bytes", ErrTruncated, got, n)
		}
		return nil, err
	}
	return DecodeMsg(body)
}

// DecodeMsg parses and checks one message body.
func DecodeMsg(body []byte) (*Msg, error) {
	var m Msg
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("malformed control message: %w", err)
	}
	switch m.Type {
	case MsgHello:
		if m.Hello == nil {
			return nil, fmt.Errorf("malformed control message: hello without body")
		}
	case MsgSetup:
		if m.Setup == nil {
			return nil, fmt.Errorf("malformed control message: setup without body")
		}
	case MsgReady:
		if m.Ready == nil {
			return nil, fmt.Errorf("malformed control message: ready without body")
		}
	case MsgStats:
		if m.Stats == nil {
			return nil, fmt.Errorf("malformed control message: stats without body")
		}
	case MsgStart, MsgStarted, MsgStop, MsgTeardown, MsgDone, MsgError:
	case "":
		return nil, fmt.Errorf("malformed control message: no type")
	default:
		return nil, fmt.Errorf("unknown control message type %q", m.Type)
	}
	return &m, nil
}

// CheckHello validates a peer's hello.
func CheckHello(h *Hello) error {
	if h.Proto != ProtoMagic {
		return fmt.Errorf("peer is not a cnibench endpoint (proto %q)", h.Proto)
	}
	if h.Version != ProtoVersion {
		return fmt.Errorf("%w: peer speaks version %d, this cnibench speaks %d; run the same cnibench version on both ends", ErrVersion, h.Version, ProtoVersion)
	}
	if h.WindowMillis < 0 {
		return fmt.Errorf("negative window in hello")
	}
	return nil
}

// ValidateSetup checks a setup request from a (possibly hostile) client.
func ValidateSetup(s *Setup) error {
	if !ValidTest(s.Test) {
		return fmt.Errorf("unknown test %q", s.Test)
	}
	if s.Test == TCPRRLoaded {
		// The client runs it as a tcp_rr session and a tcp_stream one.
		return fmt.Errorf("test %q is set up as %q plus a %q session", s.Test, TCPRR, TCPStream)
	}
	maxFlows := MaxFlows
	if s.Test == HTTP {
		maxFlows = MaxHTTPFlows
	}
	switch {
	case s.Flows < 1 || s.Flows > maxFlows:
		return fmt.Errorf("flows %d out of range 1..%d", s.Flows, maxFlows)
	case s.ReqSize < 1 || s.ReqSize > MaxMsgSize:
		return fmt.Errorf("request size %d out of range", s.ReqSize)
	case s.RespSize < 1 || s.RespSize > MaxMsgSize:
		return fmt.Errorf("response size %d out of range", s.RespSize)
	case s.MsgSize < 1 || s.MsgSize > MaxMsgSize:
		return fmt.Errorf("message size %d out of range", s.MsgSize)
	case s.HTTPBody < 0 || s.HTTPBody > MaxHTTPBody:
		return fmt.Errorf("http body %d out of range", s.HTTPBody)
	case s.TimeoutMillis < 0:
		return fmt.Errorf("negative timeout")
	}
	return nil
}

// TokenEnv is the environment variable `cnibench serve` and `cnibench run`
// read the shared secret from when --token is not given. The suite (and
// later the Kubernetes backend) generates one per run and sets it on its
// children.
const TokenEnv = "CNIBENCH_TOKEN"

// ErrRefused marks a request the server refused for lack of budget or
// authentication; the message says which limit and which flag raises it.
var ErrRefused = errors.New("server refused")

// Error codes in Msg.Code.
const (
	CodeRefused = "refused" // over a limit; retrying later or elsewhere may work
	CodeAuth    = "auth"    // missing or wrong token
)
