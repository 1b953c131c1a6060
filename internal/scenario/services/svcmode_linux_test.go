package services

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/engine/client"
	"github.com/cnibench/cnibench/internal/engine/server"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/testutil/nstest"
	"github.com/cnibench/cnibench/pkg/result"
)

// clientEnv makes the test binary a service-mode engine client (TestMain).
const clientEnv = "CNB_SERVICES_CLIENT"

func TestMain(m *testing.M) {
	if svc := os.Getenv(clientEnv); svc != "" {
		cfg := engine.Config{Service: svc, Test: os.Getenv("CNB_SERVICES_TEST"), Flows: 2, Duration: 400 * time.Millisecond,
			Warmup: 50 * time.Millisecond, Repeat: 1, Timeout: 2 * time.Second}
		res, err := (&client.Client{Token: os.Getenv("CNB_SERVICES_TOKEN")}).Run(context.Background(), cfg)
		if err != nil {
			fmt.Println("client error:", err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(res)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestServiceModeThroughKubeProxy runs the engine's tcp_crr and tcp_rr in
// service mode through a kube-proxy ClusterIP with three backends, each a
// service-mode server: every connection is DNATed to one of them, any of
// them serves it without a session, and all three get connections.
func TestServiceModeThroughKubeProxy(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "iptables-nft-restore")
	endpoints := []string{"198.18.1.2", "198.18.2.2", "198.18.1.3"}
	do, h := nstest.LoopbackNS(t, endpoints...)
	const token = "per-run-secret"
	var eps []netip.AddrPort
	counts := make([]*atomic.Int64, len(endpoints))
	for i, a := range endpoints {
		var ln net.Listener
		if err := do(func() (err error) {
			ln, err = net.Listen("tcp4", a+":12871")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		counts[i] = new(atomic.Int64)
		ctx, cancel := context.WithCancel(context.Background())
		srv := server.NewServer(nil)
		srv.Limits = server.Limits{Token: token}
		done := make(chan error, 1)
		go func() { done <- srv.ServeService(ctx, countingListener{ln, counts[i]}) }()
		t.Cleanup(func() { cancel(); <-done })
		eps = append(eps, netip.MustParseAddrPort(a+":12871"))
	}
	vip := netip.MustParseAddrPort("198.19.0.10:80")
	loadService(t, do, h, Service{Name: "default/rr:svc", VIP: vip.Addr(), Port: vip.Port(), Endpoints: eps})
	for _, test := range []string{engine.TCPCRR, engine.TCPRR} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), clientEnv+"="+vip.String(), "CNB_SERVICES_TEST="+test, "CNB_SERVICES_TOKEN="+token)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := do(cmd.Start); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s client: %v\n%s", test, err, out.String())
		}
		var res result.Result
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
			t.Fatalf("%s: client output: %v\n%s", test, err, out.String())
		}
		if len(res.Repeats) != 1 || res.Repeats[0].Error != "" || res.Repeats[0].Metrics[result.TransPerSec] <= 0 {
			t.Fatalf("%s through the VIP: %+v", test, res.Repeats)
		}
		t.Logf("%s through %v: %.0f trans/s", test, vip, res.Repeats[0].Metrics[result.TransPerSec])
	}
	for i, c := range counts {
		if c.Load() == 0 {
			t.Errorf("backend %s served no connection", endpoints[i])
		}
	}
}
