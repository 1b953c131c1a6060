package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/pkg/result"
)

// Over loopback at a modest fixed rate nothing is lost: loss must come out
// exactly 0 with every measured datagram counted on both ends (the old
// count, taken after the client had entered the measured phase and after a
// fixed 100 ms drain, reported loss here). Datagrams fit the path MTU, the
// headline is the received rate, and the fragmentation counters are there.
func TestUDPStreamExactOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	_, addr := startServer(t)
	cfg := quick(addr, engine.UDPStream, 4)
	cfg.Rate = 200e6
	cfg.Duration = 500 * time.Millisecond
	res, err := (&client.Client{}).Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Config["message_size_from"] != "path_mtu" {
		t.Errorf("datagram size from %q, want path_mtu", res.Config["message_size_from"])
	}
	mtu, _ := strconv.Atoi(res.Config["path_mtu"])
	if size, _ := strconv.Atoi(res.Config["message_size"]); mtu == 0 || size != engine.UDPPayloadFor(mtu, false) {
		t.Errorf("datagram size %s for path MTU %s", res.Config["message_size"], res.Config["path_mtu"])
	}
	for _, r := range res.Repeats {
		m := r.Metrics
		if m[result.DatagramsSent] == 0 || m[result.DatagramsReceived] != m[result.DatagramsSent] || m[result.LossPct] != 0 {
			t.Errorf("repeat %d: sent %v received %v loss %v%%", r.Index, m[result.DatagramsSent], m[result.DatagramsReceived], m[result.LossPct])
		}
		if m[result.ThroughputBitsPerSec] != m[result.ThroughputRxBitsPerSec] {
			t.Errorf("headline %v is not the received rate %v", m[result.ThroughputBitsPerSec], m[result.ThroughputRxBitsPerSec])
		}
		for _, k := range []string{"client_ip_frag_creates", "server_ip_reasm_reqds"} {
			if v, ok := m[k]; !ok || v != 0 {
				t.Errorf("%s = %v (present %v), want 0", k, v, ok)
			}
		}
	}
}
