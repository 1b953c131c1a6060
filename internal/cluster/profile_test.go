package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pprof "github.com/google/pprof/profile"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
)

// profExec is the fake cluster's exec with `agent profile` answered: the
// probe says probeErr; a profile says "ready", samples until its stdin
// ends and returns, for the client's window, 5 tcp_sendmsg samples in it
// and 7 idle ones a second before it. `cnibench run` measures one window
// of 100 ms. fail names the host pods whose sampler fails at once.
type profExec struct {
	*fakeCluster
	probeErr string
	fail     map[string]bool
	probes   atomic.Int32

	mu  sync.Mutex
	win profile.Span
}

func (e *profExec) Exec(ctx context.Context, ns, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(cmd) > 1 && cmd[1] == "run" {
		from := time.Now()
		time.Sleep(100 * time.Millisecond)
		e.mu.Lock()
		e.win = profile.Span{From: from, To: from.Add(100 * time.Millisecond)}
		e.mu.Unlock()
		r := &result.Result{Schema: result.SchemaResult, Start: from.UTC(), Config: map[string]string{},
			Repeats: []result.Repeat{{Index: 0, Start: from.UTC(), DurationSec: 0.1, Metrics: map[string]float64{result.ThroughputBitsPerSec: 1e9}}}}
		return json.NewEncoder(stdout).Encode(r)
	}
	if len(cmd) < 4 || cmd[3] != "profile" {
		return e.fakeCluster.Exec(ctx, ns, pod, container, cmd, stdin, stdout, stderr)
	}
	short := strings.TrimPrefix(pod, pod[:strings.LastIndex(pod, "host-")])
	e.record(execCall{ns: ns, pod: pod, short: short, cmd: append([]string(nil), cmd...)})
	out := json.NewEncoder(stdout)
	if flag(cmd, "--probe") != "" || cmd[len(cmd)-1] == "--probe" {
		e.probes.Add(1)
		return out.Encode(agent.Profile{Schema: agent.SchemaProfile, Probe: true, Error: e.probeErr})
	}
	if e.fail[short] {
		out.Encode(agent.Profile{Schema: agent.SchemaProfile, Error: "perf_event_open: operation not permitted"})
		return errors.New("command terminated with exit code 1")
	}
	if flag(cmd, "--hz") != "499" || flag(cmd, "--duration") == "" {
		return fmt.Errorf("agent profile %q", cmd)
	}
	fmt.Fprintln(stderr, "ready")
	if _, err := io.Copy(io.Discard, stdin); err != nil {
		return err
	}
	e.mu.Lock()
	win := e.win
	e.mu.Unlock()
	gz, err := fakeNodeProfile(win.From.Add(10*time.Millisecond), win.From.Add(-time.Second))
	if err != nil {
		return err
	}
	return out.Encode(agent.Profile{Schema: agent.SchemaProfile, Hz: 499, CPUs: 2, Samples: 12, Start: win.From.Add(-2 * time.Second),
		WindowNS: int64(3 * time.Second), PprofGz: gz})
}

// fakeNodeProfile is a gzipped pprof profile as the agent's: 5 samples of
// cnibench in tcp_sendmsg at in, 7 idle samples at out.
func fakeNodeProfile(in, out time.Time) ([]byte, error) {
	km := &pprof.Mapping{ID: 1, Start: 0xffffffff81000000, Limit: 0xffffffff82000000, File: profile.KernelMapping}
	fn := func(id uint64, name string) *pprof.Function {
		return &pprof.Function{ID: id, Name: name, SystemName: name}
	}
	fTCP, fIdle, fComm, fSwapper := fn(1, "tcp_sendmsg"), fn(2, "do_idle"), fn(3, "comm:cnibench"), fn(4, "comm:swapper")
	lTCP := &pprof.Location{ID: 1, Mapping: km, Address: 0xffffffff81000010, Line: []pprof.Line{{Function: fTCP}}}
	lIdle := &pprof.Location{ID: 2, Mapping: km, Address: 0xffffffff81000020, Line: []pprof.Line{{Function: fIdle}}}
	lComm := &pprof.Location{ID: 3, Line: []pprof.Line{{Function: fComm}}}
	lSwapper := &pprof.Location{ID: 4, Line: []pprof.Line{{Function: fSwapper}}}
	p := &pprof.Profile{
		SampleType:    []*pprof.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        int64(time.Second) / 499,
		TimeNanos:     out.Add(-time.Second).UnixNano(),
		DurationNanos: int64(3 * time.Second),
		Mapping:       []*pprof.Mapping{km},
		Location:      []*pprof.Location{lTCP, lIdle, lComm, lSwapper},
		Function:      []*pprof.Function{fTCP, fIdle, fComm, fSwapper},
		Sample: []*pprof.Sample{
			{Location: []*pprof.Location{lTCP, lComm}, Value: []int64{5, 5e6}, Label: map[string][]string{"comm": {"cnibench"}},
				NumLabel: map[string][]int64{profile.TimeLabel: {in.UnixNano()}}},
			{Location: []*pprof.Location{lIdle, lSwapper}, Value: []int64{7, 7e6}, Label: map[string][]string{"comm": {"swapper"}},
				NumLabel: map[string][]int64{profile.TimeLabel: {out.UnixNano()}}},
		},
	}
	var buf strings.Builder
	if err := p.Write(&buf); err != nil {
		return nil, err
	}
	return []byte(buf.String()), nil
}

func profBackend(e *profExec) *Backend {
	return NewWithClient(Options{Image: testImage, PullPolicy: "Never", CNIConfDir: "/var/lib/{node}/cni/net.d",
		PodTimeout: 5 * time.Second, FootprintWindow: 50 * time.Millisecond}, e.cs, e)
}

func TestCanProfile(t *testing.T) {
	tests := []struct {
		name     string
		noHost   bool
		probeErr string
		want     string // "" for nil
		probes   int32
	}{
		{name: "host pods sample", probes: 2},
		{name: "paranoid", probeErr: "profile: probe: CPU profiling not supported: perf_event_open: permission denied (kernel.perf_event_paranoid is 4)",
			want: "node n1 cannot be sampled from its privileged host pod: profile: probe: CPU profiling not supported", probes: 1},
		{name: "no host pods", noHost: true, want: "privileged host pods, which do not run: the namespace's admission refuses"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fc := newFakeCluster(t)
			if tc.noHost {
				fc.admission = map[string]string{podHostA: psRestricted, podHostB: psRestricted}
			}
			e := &profExec{fakeCluster: fc, probeErr: tc.probeErr}
			d := up(t, ctx, profBackend(e))
			for range 2 { // asked once, answered from the cache after
				err := d.CanProfile()
				if tc.want == "" {
					if err != nil {
						t.Fatalf("CanProfile: %v", err)
					}
					continue
				}
				if err == nil || !errors.Is(err, backend.ErrNotSupported) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("CanProfile: %v; want one line wrapping ErrNotSupported with %q", err, tc.want)
				}
			}
			if got := e.probes.Load(); got != tc.probes {
				t.Errorf("%d probes, want %d (one per node, once)", got, tc.probes)
			}
		})
	}
}

func TestRunProfiled(t *testing.T) {
	tests := []struct {
		name  string
		fail  map[string]bool
		nodes map[string]int64 // samples per node root; nil: no file
	}{
		{name: "both nodes", nodes: map[string]int64{"node:n1": 5, "node:n2": 5}},
		{name: "server node's sampler fails", fail: map[string]bool{podHostB: true}, nodes: map[string]int64{"node:n1": 5}},
		{name: "every sampler fails", fail: map[string]bool{podHostA: true, podHostB: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e := &profExec{fakeCluster: newFakeCluster(t), fail: tc.fail}
			d := up(t, ctx, profBackend(e))
			file := filepath.Join(t.TempDir(), "cell.pb.gz")
			stdout, _, err := d.RunProfiled(ctx, place{d.ns, d.name(podCliA)}, clientArgs, file, 499)
			var r result.Result
			if err != nil || json.Unmarshal(stdout, &r) != nil || len(r.Repeats) != 1 {
				t.Fatalf("the client's measurement: %v, %q", err, stdout)
			}
			if len(e.callsOf("/cnibench", "k8s", "agent", "profile")) != 2 {
				t.Errorf("agent profile calls %v, want one per node", e.callsOf("/cnibench", "k8s", "agent", "profile"))
			}
			if tc.nodes == nil {
				if _, err := os.Stat(file); !os.IsNotExist(err) {
					t.Errorf("a profile was written without a sampler: %v", err)
				}
				return
			}
			p, err := profile.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, s := range p.P.Sample {
				root := s.Location[len(s.Location)-1].Line[0].Function.Name
				got[root] += s.Value[0]
				if _, ok := s.NumLabel[profile.TimeLabel]; ok {
					t.Error("the written profile keeps the time label")
				}
				if "node:"+s.Label[profile.NodeLabel][0] != root {
					t.Errorf("sample of %s labelled node=%v", root, s.Label[profile.NodeLabel])
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.nodes) {
				t.Errorf("samples by root frame %v, want %v (the idle samples outside the window cropped)", got, tc.nodes)
			}
			if sh := profile.Breakdown(p.P); sh.Exclusive["tcpip"] != 1 {
				t.Errorf("breakdown %v: want every sample in tcpip", sh.Exclusive)
			}
			if p.Windows != 1 || p.Window != 100*time.Millisecond || p.CPUs != 2*len(tc.nodes) {
				t.Errorf("header: %d windows of %v on %d CPUs", p.Windows, p.Window, p.CPUs)
			}
		})
	}
}
