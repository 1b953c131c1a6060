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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/proxies"
	"github.com/cnibench/cnibench/internal/suite"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// TestSuiteProxies runs the scenario on the real lab (two datapaths,
// veth-routing and bridge; both proxies; 0, 1 and 2 hops; keep-alive on
// and off; one repeat of short windows) and checks that every cell was
// measured on both datapaths, the proxies' CPU recorded, the client kept
// its connections alive or opened one per request as the keepalive label
// says, two sidecars cost more latency than none and a connection per
// request more than a kept one, and that the host was left untouched:
// /etc's haproxy and nginx files unchanged, no proxy left running, nothing
// of the scenario listening in the host's namespace at any time.
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
	build, err := reg.Parse("--proxy-keepalive", "on,off")
	if err != nil {
		t.Fatal(err)
	}
	o, err := suite.Profile("quick")
	if err != nil {
		t.Fatal(err)
	}
	o.Scenario, o.NewScenario = proxies.ScenarioName, build
	o.Repeat, o.Duration, o.Warmup, o.OutDir = 1, 300*time.Millisecond, 100*time.Millisecond, t.TempDir()
	datapaths := []string{"veth-routing", "bridge"}
	b, err := lab.NewBackend(lab.BackendOptions{Datapaths: datapaths, NoBaseline: true,
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
	// Per datapath 10 points (none/0, haproxy/1, haproxy/2, nginx/1,
	// nginx/2, each keep-alive on and off) × 2 cells.
	if len(set.Runs) != 40 || len(set.Skipped) != 0 {
		t.Fatalf("%d runs (want 40), skipped %+v\n%s", len(set.Runs), set.Skipped, progress.String())
	}
	perDatapath := map[string]int{}
	p50 := map[string]float64{} // datapath/proxy/hops/keepalive at 1 flow
	cpu := map[string]float64{} // datapath/proxy/hops/keepalive, both cells
	for _, r := range set.Runs {
		l := r.Labels
		perDatapath[l["datapath"]]++
		if len(r.Repeats) != 1 || r.Repeats[0].Error != "" {
			t.Errorf("%v: repeats %+v", l, r.Repeats)
			continue
		}
		m := r.Repeats[0].Metrics
		ka := l[proxies.LabelKeepAlive]
		key := l["datapath"] + "/" + l[proxies.LabelProxy] + "/" + l[proxies.LabelHops] + "/" + ka
		if m[result.TransPerSec] <= 0 || m[result.LatencyUsP50] <= 0 || l["test"] != result.TestHTTP {
			t.Errorf("%v: %v trans/s, p50 %v µs", l, m[result.TransPerSec], m[result.LatencyUsP50])
		}
		// The client as the label says: a connection per request
		// (connect times measured) with keep-alive off, kept ones on.
		_, connects := m[result.ConnectUsP50]
		if want := map[string]string{proxies.On: "true", proxies.Off: "false"}[ka]; r.Config["http_keepalive"] != want || connects != (ka == proxies.Off) {
			t.Errorf("%v: client http_keepalive=%q, connect times measured %v", l, r.Config["http_keepalive"], connects)
		}
		_, hasCPU := m[proxies.MetricCPUPct]
		if hasCPU != (l[proxies.LabelHops] != "0") {
			t.Errorf("%v: proxy CPU recorded %v", l, hasCPU)
		}
		if l["flows"] == "1" {
			p50[key] = m[result.LatencyUsP50]
		}
		cpu[key] += m[proxies.MetricCPUSeconds]
		t.Logf("%-30s flows=%-2s %8.0f trans/s  p50 %6.1f µs  p99 %6.1f µs  proxy CPU %5.1f %%", key, l["flows"],
			m[result.TransPerSec], m[result.LatencyUsP50], m[result.LatencyUsP99], m[proxies.MetricCPUPct])
	}
	for _, dp := range datapaths {
		if perDatapath[dp] != 20 {
			t.Errorf("%s: %d runs, want 20", dp, perDatapath[dp])
		}
		for _, ka := range proxies.KeepAlives {
			for _, px := range proxies.Proxies {
				for _, h := range []string{"1", "2"} {
					if cpu[dp+"/"+px+"/"+h+"/"+ka] <= 0 {
						t.Errorf("%s, %s at %s hops, keep-alive %s: no proxy CPU measured", dp, px, h, ka)
					}
				}
				if two, none := p50[dp+"/"+px+"/2/"+ka], p50[dp+"/none/0/"+ka]; two <= none {
					t.Errorf("%s, keep-alive %s: %s's p50 through two sidecars %v µs, not above the direct %v µs", dp, ka, px, two, none)
				}
			}
		}
		// A TCP handshake per request costs more than none (about 3× at
		// 0 hops on this machine).
		if on, off := p50[dp+"/none/0/on"], p50[dp+"/none/0/off"]; off <= on {
			t.Errorf("%s: direct p50 with keep-alive off %v µs, not above on's %v µs", dp, off, on)
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

// hostListening lists the scenario's ports listening in the host's
// network namespace, from /proc/thread-self/net/tcp{,6} on a thread of
// its own: /proc/self/net is the namespace of the process's first thread,
// which a goroutine of the lab may have locked and moved into a pod's
// namespace at that moment (a client sidecar's 127.0.0.1:15001 was once
// seen there). A freshly locked thread is in the host's namespace: a
// thread that entered another is restored or ended when unlocked.
func hostListening(t *testing.T) []string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out []string
	for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
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
