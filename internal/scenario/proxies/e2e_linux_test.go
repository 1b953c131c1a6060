package proxies_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/proxies"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestSuiteProxies runs the scenario on the real lab (veth-routing, both
// proxies, 0, 1 and 2 hops, keep-alive on, short windows) and checks that
// every cell was measured, the proxies' CPU recorded, two sidecars cost
// more latency than none, and that the host was left untouched: /etc's
// haproxy and nginx files unchanged, no proxy left running, nothing of the
// scenario listening in the host's namespace at any time.
func TestSuiteProxies(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	for _, p := range proxies.Proxies {
		testutil.NeedAnyProgram(t, p, "/usr/sbin/"+p)
	}
	bin := buildCnibench(t)
	etcBefore := etcSnapshot(t)
	procsBefore := proxyProcs(t)

	reg, err := scenario.Lookup(proxies.ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	build, err := reg.Parse("--proxy-keepalive", "on")
	if err != nil {
		t.Fatal(err)
	}
	o, err := suite.Profile("quick")
	if err != nil {
		t.Fatal(err)
	}
	o.Scenario, o.NewScenario = proxies.ScenarioName, build
	o.Repeat, o.Duration, o.Warmup, o.OutDir = 1, 300*time.Millisecond, 100*time.Millisecond, t.TempDir()
	b, err := lab.NewBackend(lab.BackendOptions{Datapaths: []string{"veth-routing"}, NoBaseline: true,
		Binary: bin, LockPath: filepath.Join(t.TempDir(), "lock")})
	if err != nil {
		t.Fatal(err)
	}
	o.Backend = b

	// Watch the host's listening sockets for the scenario's ports while
	// it runs.
	stop := make(chan struct{})
	var watched sync.WaitGroup
	var hostListens []string
	listeningBefore := hostListening(t)
	watched.Add(1)
	go func() {
		defer watched.Done()
		for {
			for _, l := range hostListening(t) {
				if !slices.Contains(listeningBefore, l) {
					hostListens = append(hostListens, l)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var progress strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := (&suite.Runner{Progress: &progress}).Run(ctx, o)
	close(stop)
	watched.Wait()
	if err != nil {
		t.Fatalf("suite: %v\n%s", err, progress.String())
	}
	if len(hostListens) > 0 {
		t.Errorf("the scenario's ports listened in the host's namespace: %v", dedup(hostListens))
	}
	if after := etcSnapshot(t); !slices.Equal(after, etcBefore) {
		t.Errorf("/etc/haproxy or /etc/nginx changed:\n%v\n→\n%v", etcBefore, after)
	}
	if after := proxyProcs(t); len(after) > len(procsBefore) {
		t.Errorf("proxies left running: %v (before: %v)", after, procsBefore)
	}

	set := out.Set
	// 5 points (none/0, haproxy/1, haproxy/2, nginx/1, nginx/2) × 2 cells.
	if len(set.Runs) != 10 || len(set.Skipped) != 0 {
		t.Fatalf("%d runs (want 10), skipped %+v\n%s", len(set.Runs), set.Skipped, progress.String())
	}
	p50 := map[string]float64{} // proxy/hops at 1 flow
	cpu := map[string]float64{} // proxy/hops, both cells
	for _, r := range set.Runs {
		l := r.Labels
		if len(r.Repeats) != 1 || r.Repeats[0].Error != "" {
			t.Errorf("%v: repeats %+v", l, r.Repeats)
			continue
		}
		m := r.Repeats[0].Metrics
		key := l[proxies.LabelProxy] + "/" + l[proxies.LabelHops]
		if m[result.TransPerSec] <= 0 || m[result.LatencyUsP50] <= 0 || l[proxies.LabelKeepAlive] != proxies.On || l["test"] != result.TestHTTP {
			t.Errorf("%v: %v trans/s, p50 %v µs", l, m[result.TransPerSec], m[result.LatencyUsP50])
		}
		_, hasCPU := m[proxies.MetricCPUPct]
		if hasCPU != (l[proxies.LabelHops] != "0") {
			t.Errorf("%v: proxy CPU recorded %v", l, hasCPU)
		}
		if l["flows"] == "1" {
			p50[key] = m[result.LatencyUsP50]
		}
		cpu[key] += m[proxies.MetricCPUSeconds]
		t.Logf("%-10s flows=%-2s %8.0f trans/s  p50 %6.1f µs  p99 %6.1f µs  proxy CPU %5.1f %%", key, l["flows"],
			m[result.TransPerSec], m[result.LatencyUsP50], m[result.LatencyUsP99], m[proxies.MetricCPUPct])
	}
	for _, px := range proxies.Proxies {
		for _, h := range []string{"1", "2"} {
			if cpu[px+"/"+h] <= 0 {
				t.Errorf("%s at %s hops: no proxy CPU measured", px, h)
			}
		}
		if p50[px+"/2"] <= p50["none/0"] {
			t.Errorf("%s: p50 through two sidecars %v µs, not above the direct %v µs", px, p50[px+"/2"], p50["none/0"])
		}
	}
}

// buildCnibench builds the command run inside the namespaces.
func buildCnibench(t *testing.T) string {
	t.Helper()
	testutil.NeedProgram(t, "go")
	bin := filepath.Join(t.TempDir(), "cnibench")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/cnibench/cnibench/cmd/cnibench").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// etcSnapshot lists every file under /etc/haproxy and /etc/nginx with its
// mode and content hash.
func etcSnapshot(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, root := range []string{"/etc/haproxy", "/etc/nginx"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			line := fmt.Sprintf("%s %v %v", path, info.Mode(), info.ModTime().UnixNano())
			if info.Mode().IsRegular() {
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				line += fmt.Sprintf(" %x", sha256.Sum256(b))
			}
			out = append(out, line)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// proxyProcs lists the running haproxy and nginx processes the scenario
// started (their working directory is its temporary directory; other
// haproxy or nginx processes on this machine are not its).
func proxyProcs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if c := strings.TrimSpace(string(b)); err == nil && (c == "haproxy" || c == "nginx") && strings.Contains(cwd, "cnibench-proxies-") {
			out = append(out, e.Name()+":"+c)
		}
	}
	return out
}

// scenarioPorts are the ports the scenario's proxies and server use.
var scenarioPorts = []int{proxies.ServerHTTPPort, proxies.ServerControlPort, proxies.NodeProxyPort, proxies.OutboundPort, proxies.InboundPort}

// hostListening lists the scenario's ports listening in this process's
// (the host's) network namespace, from /proc/self/net/tcp{,6}.
func hostListening(t *testing.T) []string {
	var out []string
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fl := strings.Fields(sc.Text())
			if len(fl) < 4 || fl[3] != "0A" { // TCP_LISTEN
				continue
			}
			i := strings.LastIndexByte(fl[1], ':')
			port, err := strconv.ParseUint(fl[1][i+1:], 16, 16)
			if err == nil && slices.Contains(scenarioPorts, int(port)) {
				out = append(out, fl[1])
			}
		}
		fh.Close()
	}
	return out
}

func dedup(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
