package client

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/server"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// echoReplyOf turns a request as putEcho wrote it into the reply the
// kernel would hand back.
func echoReplyOf(req []byte, v6 bool) []byte {
	b := append([]byte(nil), req...)
	b[0] = icmpEchoReply4
	if v6 {
		b[0] = icmpEchoReply6
	}
	return b
}

func TestEchoPayloadMatching(t *testing.T) {
	const cookie, flow = 0x1122334455667788, 3
	tests := []struct {
		name    string
		payload int
		v6      bool
		mangle  func(b []byte) []byte
		parseAs int // flow the reader expects
		ok      bool
	}{
		{"v4 reply", 56, false, nil, flow, true},
		{"v6 reply", 56, true, nil, flow, true},
		{"header-only payload", engine.ICMPPayloadHeader, false, nil, flow, true},
		{"large payload", 9000, false, nil, flow, true},
		{"request type, not reply", 56, false, func(b []byte) []byte { b[0] = icmpEchoRequest4; return b }, flow, false},
		{"v4 reply on a v6 socket", 56, true, func(b []byte) []byte { b[0] = icmpEchoReply4; return b }, flow, false},
		{"non-zero code", 56, false, func(b []byte) []byte { b[1] = 1; return b }, flow, false},
		{"other session's cookie", 56, false, func(b []byte) []byte { b[engine.ICMPHeader]++; return b }, flow, false},
		{"other flow", 56, false, nil, flow + 1, false},
		{"ICMP seq disagrees", 56, false, func(b []byte) []byte { b[7]++; return b }, flow, false},
		{"corrupted fill", 56, false, func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, flow, false},
		{"truncated", 56, false, func(b []byte) []byte { return b[:len(b)-1] }, flow, false},
		{"too long", 56, false, func(b []byte) []byte { return append(b, 0) }, flow, false},
		{"empty", 56, false, func(b []byte) []byte { return b[:0] }, flow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := make([]byte, engine.ICMPHeader+tt.payload)
			in := echoMsg{Cookie: cookie, Seq: 70000, Stamp: 1234567890123, Flow: flow}
			putEcho(req, tt.v6, in)
			want := byte(icmpEchoRequest4)
			if tt.v6 {
				want = icmpEchoRequest6
			}
			if req[0] != want || binary.BigEndian.Uint16(req[6:]) != uint16(70000&0xffff) {
				t.Fatalf("request header % x", req[:8])
			}
			b := echoReplyOf(req, tt.v6)
			if tt.mangle != nil {
				b = tt.mangle(b)
			}
			got, ok := parseEchoReply(b, tt.v6, tt.payload, cookie, tt.parseAs)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && got != in {
				t.Fatalf("parsed %+v, want %+v", got, in)
			}
		})
	}
}

func TestEchoWireSize(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{1, engine.ICMPPayloadHeader}, {engine.ICMPPayloadHeader, engine.ICMPPayloadHeader}, {56, 56}, {1400, 1400}} {
		if got := engine.ICMPWireSize(tt.in); got != tt.want {
			t.Errorf("ICMPWireSize(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestEchoBook(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		op      string // "send", "reply", "expire"
		seq     uint64
		stamp   int64
		ms      int
		verdict echoVerdict
		lost    int
	}
	tests := []struct {
		name  string
		steps []step
		left  int
	}{
		{"reply matches", []step{{op: "send", seq: 1, stamp: 1}, {op: "reply", seq: 1, stamp: 1, verdict: echoMatched}}, 0},
		{"duplicate reply is late", []step{{op: "send", seq: 1, stamp: 1}, {op: "reply", seq: 1, stamp: 1, verdict: echoMatched}, {op: "reply", seq: 1, stamp: 1, verdict: echoLate}}, 0},
		{"stamp mismatch is late", []step{{op: "send", seq: 1, stamp: 1}, {op: "reply", seq: 1, stamp: 2, verdict: echoLate}}, 1},
		{"never sent is late", []step{{op: "reply", seq: 9, stamp: 1, verdict: echoLate}}, 0},
		{"expired then late", []step{
			{op: "send", seq: 1, stamp: 1, ms: 0}, {op: "send", seq: 2, stamp: 2, ms: 10},
			{op: "expire", ms: 5, lost: 1}, {op: "reply", seq: 1, stamp: 1, verdict: echoLate},
			{op: "reply", seq: 2, stamp: 2, verdict: echoMatched}}, 0},
		{"answered ones are not lost", []step{
			{op: "send", seq: 1, stamp: 1, ms: 0}, {op: "send", seq: 2, stamp: 2, ms: 1}, {op: "send", seq: 3, stamp: 3, ms: 2},
			{op: "reply", seq: 2, stamp: 2, verdict: echoMatched}, {op: "expire", ms: 100, lost: 2}}, 0},
		{"nothing due", []step{{op: "send", seq: 1, stamp: 1, ms: 50}, {op: "expire", ms: 50, lost: 0}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newEchoBook()
			for i, s := range tt.steps {
				switch s.op {
				case "send":
					b.add(s.seq, echoSent{t0: at(s.ms), stamp: s.stamp})
				case "reply":
					if _, v := b.answer(echoMsg{Seq: s.seq, Stamp: s.stamp}); v != s.verdict {
						t.Fatalf("step %d: verdict %d, want %d", i, v, s.verdict)
					}
				case "expire":
					if lost := b.expire(at(s.ms)); lost != s.lost {
						t.Fatalf("step %d: lost %d, want %d", i, lost, s.lost)
					}
				}
			}
			if len(b.out) != tt.left {
				t.Fatalf("%d outstanding, want %d", len(b.out), tt.left)
			}
		})
	}
}

func TestEchoBookCompacts(t *testing.T) {
	b := newEchoBook()
	t0 := time.Unix(0, 0)
	for s := uint64(1); s <= 5000; s++ {
		b.add(s, echoSent{t0: t0.Add(time.Duration(s) * time.Millisecond)})
	}
	if lost := b.expire(t0.Add(4000 * time.Millisecond)); lost != 3999 {
		t.Fatalf("lost %d, want 3999", lost)
	}
	if len(b.order)-b.head != 1001 || len(b.out) != 1001 || b.head > 1024 {
		t.Fatalf("order %d head %d out %d", len(b.order), b.head, len(b.out))
	}
}

// icmpHelperEnv makes the test binary a helper process in a new network
// namespace of its own (TestICMPEchoHelper).
const icmpHelperEnv = "CNIBENCH_TEST_ICMP_HELPER"

// runICMPHelper runs TestICMPEchoHelper in a child process in a new
// network namespace, which disappears with it; mode "run" allows group 0
// to open ICMP sockets there first, "refused" leaves the default.
func runICMPHelper(t *testing.T, mode string) string {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestICMPEchoHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), icmpHelperEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper (%s): %v\n%s", mode, err, out)
	}
	return string(out)
}

// TestICMPEchoHelper is the child of runICMPHelper; it does nothing in a
// normal test run. It prints one line "RESULT <json>" or "ERROR <text>".
func TestICMPEchoHelper(t *testing.T) {
	mode := os.Getenv(icmpHelperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	if mode != "refused" {
		// This process is alone in its new namespace: the sysctl is the
		// namespace's, never the host's.
		if err := os.WriteFile(pingGroupRange, []byte("0 0"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.NewServer(nil).Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	cfg := engine.Config{Target: ln.Addr().String(), Test: engine.ICMPEcho, Flows: 2, Duration: 400 * time.Millisecond,
		Warmup: 100 * time.Millisecond, Repeat: 2, Timeout: 2 * time.Second}
	if mode == "rate" {
		cfg.Rate = icmpTestRate
	}
	res, err := (&Client{}).Run(context.Background(), cfg)
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RESULT %s\n", b)
}

// icmpTestRate is the open-loop test's offered load (trans/s).
const icmpTestRate = 2000

func TestICMPEchoInNamespace(t *testing.T) {
	for _, mode := range []string{"run", "rate"} {
		t.Run(mode, func(t *testing.T) { testICMPEcho(t, mode) })
	}
}

func testICMPEcho(t *testing.T, mode string) {
	out := runICMPHelper(t, mode)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "RESULT ") || strings.HasPrefix(l, "ERROR ") {
			line = l
		}
	}
	if !strings.HasPrefix(line, "RESULT ") {
		t.Fatalf("no result from the helper:\n%s", out)
	}
	var res result.Result
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "RESULT ")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Repeats) != 2 {
		t.Fatalf("%d repeats", len(res.Repeats))
	}
	for _, r := range res.Repeats {
		if r.Error != "" {
			t.Fatalf("repeat %d: %s", r.Index, r.Error)
		}
		m := r.Metrics
		if m[result.TransPerSec] <= 0 {
			t.Errorf("repeat %d: trans_per_sec %v", r.Index, m[result.TransPerSec])
		}
		if tps := m[result.TransPerSec]; mode == "rate" && (tps < 0.9*icmpTestRate || tps > 1.1*icmpTestRate) {
			t.Errorf("repeat %d: trans_per_sec %v at --rate %d", r.Index, tps, icmpTestRate)
		}
		for _, k := range []string{result.LatencyUsP50, result.LatencyUsP99, result.LatencyUsMax} {
			if v, ok := m[k]; !ok || v <= 0 {
				t.Errorf("repeat %d: %s = %v (present %v)", r.Index, k, v, ok)
			}
		}
		for _, k := range []string{result.EchoRequestsLost, result.EchoRepliesMismatched, result.Errors} {
			if v, ok := m[k]; !ok || v != 0 {
				t.Errorf("repeat %d: %s = %v (present %v), want 0", r.Index, k, v, ok)
			}
		}
		// Every reply answers a request of the window or just before it.
		if sent := m[result.EchoRequestsSent]; sent < m[result.TransPerSec]*r.DurationSec*0.9 {
			t.Errorf("repeat %d: %v requests sent for %v trans/s", r.Index, sent, m[result.TransPerSec])
		}
		if r.LatencyHist == "" {
			t.Errorf("repeat %d: no latency histogram", r.Index)
		}
	}
	if res.Config["request_size"] != "56" || res.Config["request_size_on_wire"] != "56" {
		t.Errorf("config %v", res.Config)
	}
}

func TestICMPEchoRefusedByPingGroupRange(t *testing.T) {
	out := runICMPHelper(t, "refused")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ERROR ") {
			line = strings.TrimPrefix(l, "ERROR ")
		}
	}
	if line == "" {
		t.Fatalf("icmp_echo ran without ping_group_range allowing group 0:\n%s", out)
	}
	for _, want := range []string{"net.ipv4.ping_group_range", `"1 0"`, "sysctl -w", "ICMP datagram socket"} {
		if !strings.Contains(line, want) {
			t.Errorf("error %q lacks %q", line, want)
		}
	}
}
