package apps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/encrypt"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/internal/wireguard"
	"github.com/cnibench/cnibench/pkg/result"
)

// startWGNode is the suite's Env.Start for `cnibench wg-node`, in-process:
// the userspace WireGuard device created on a thread in the node's
// namespace (its TUN device and sockets stay there).
func startWGNode(_ context.Context, place backend.Place, stdin []byte, args ...string) (*scenario.Server, error) {
	ns, ok := place.(*lab.NS)
	if !ok || len(args) != 1 || args[0] != "wg-node" {
		return nil, fmt.Errorf("test Start: want wg-node in a lab namespace, got %v at %T", args, place)
	}
	cfg, err := wireguard.DecodeConfig(bytes.NewReader(stdin))
	if err != nil {
		return nil, err
	}
	var u *wireguard.Userspace
	if err := ns.Do(func() (err error) {
		u, err = wireguard.StartUserspace(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		return err
	}); err != nil {
		return nil, err
	}
	return &scenario.Server{Stop: func() { u.Close() }}, nil
}

// TestAppsThroughWireGuard runs scp and HTTP on veth-routing in clear and
// through userspace WireGuard (kernel WireGuard is skipped where the
// kernel lacks it, with the reason): every cell measures transfers and
// carries the wire proof — through the tunnel, no packet between the pods
// in clear and the tunnel's frames seen; in clear, the pods' packets seen
// — and the host's daemons and files are untouched.
func TestAppsThroughWireGuard(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedAnyProgram(t, "nginx", "/usr/sbin/nginx")
	testutil.NeedAnyProgram(t, "sshd", "/usr/sbin/sshd")
	testutil.NeedProgram(t, "curl", "scp", "ssh", "ssh-keygen")
	testutil.SkipIfNotSupported(t, wireguard.ProbeUserspace(), wireguard.ErrNotSupported)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	l := upCheckedLab(ctx, t)
	env := scenario.Env{Deployment: testLab{l: l}, Datapath: "veth-routing", Start: startWGNode}
	s, err := New(Options{Apps: []string{SCP, HTTP}, Sizes: []string{"1MiB"}, Encrypt: []string{encrypt.WireGuard}})
	if err != nil {
		t.Fatal(err)
	}
	w := scenario.Window{Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond}
	ran := map[string]int{}
	for _, p := range s.Points() {
		enc := p.Labels[encrypt.LabelEncryption]
		if p.Skip != nil {
			if enc != encrypt.WireGuard || !errors.Is(p.Skip, wireguard.ErrNotSupported) {
				t.Errorf("%v: skipped: %v", p.Labels, p.Skip)
			}
			t.Logf("%s %s: %s", p.Labels[LabelApp], enc, p.SkipReason())
			continue
		}
		prep, err := s.Prepare(ctx, env, p)
		if err != nil {
			t.Fatalf("%v: %v", p.Labels, err)
		}
		if _, ok := prep.Config()["encryption_impl"]; !ok || prep.Metrics()["app_setup_seconds"] <= 0 {
			t.Errorf("%v: config %v metrics %v lack the tunnel's or the daemon's", p.Labels, prep.Config(), prep.Metrics())
		}
		for _, c := range s.Cells(p) {
			end, err := prep.(scenario.Checker).BeginCell(c)
			if err != nil {
				t.Fatalf("%v %v: begin: %v", p.Labels, c.Labels, err)
			}
			res, err := prep.(scenario.Measurer).Measure(ctx, c, w)
			proof, perr := end()
			if err != nil || perr != nil {
				t.Errorf("%v %v: measure %v, proof %v", p.Labels, c.Labels, err, perr)
				continue
			}
			m := res.Repeats[0].Metrics
			t.Logf("%s %s %v: %s, %.0f transfers/s; wire: %.0f frames, %.0f tunnel, %.0f pods in clear, coverage %.1f %%",
				p.Labels[LabelApp], enc, c.Labels, result.Format(result.ThroughputBitsPerSec, m[result.ThroughputBitsPerSec]), m[result.TransPerSec],
				proof[encrypt.MetricWireFrames], proof[encrypt.MetricWireEncFrames], proof[encrypt.MetricWirePodClear], proof[encrypt.MetricWireCoverage])
			if m[result.ThroughputBitsPerSec] <= 0 || m[result.TransPerSec] <= 0 {
				t.Errorf("%v %v: result %+v", p.Labels, c.Labels, res.Repeats[0])
			}
			clear := proof[encrypt.MetricWirePodClear]
			if enc == encrypt.None && (clear == 0 || proof[encrypt.MetricWireEncFrames] != 0) ||
				enc != encrypt.None && (clear != 0 || proof[encrypt.MetricWireEncFrames] < 100) {
				t.Errorf("%v %v: proof metrics %v", p.Labels, c.Labels, proof)
			}
			ran[enc]++
		}
		if _, err := prep.Close(ctx); err != nil {
			t.Errorf("%v: close: %v", p.Labels, err)
		}
	}
	if ran[encrypt.None] != 3 || ran[encrypt.WireGuardUserspace] != 3 {
		t.Errorf("cells run: %v, want 3 in clear and 3 through userspace WireGuard", ran)
	}
	// The tunnel is gone: the server pod is reached in clear again.
	if _, topo, err := l.Datapath("veth-routing"); err == nil {
		for _, n := range topo.Nodes {
			if _, err := n.Handle().LinkByName("wg0"); err == nil {
				t.Errorf("wg0 left on %s", n.Name)
			}
		}
	}
}
