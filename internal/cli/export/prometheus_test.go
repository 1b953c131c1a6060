package exportcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/export"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// needServers returns the paths of prometheus and prometheus-pushgateway,
// skipping (failing with CI=true) when one is missing.
func needServers(t *testing.T) (prom, pgw string) {
	t.Helper()
	var missing []string
	for _, name := range []string{"prometheus", "prometheus-pushgateway"} {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		if name == "prometheus" {
			prom = p
		} else {
			pgw = p
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("needs %s: apt-get install prometheus prometheus-pushgateway (`make deps` installs them without starting their services)", strings.Join(missing, " and "))
		if testutil.InCI() {
			t.Fatalf("CI=true: a missing program fails the test instead of skipping it: %s", msg)
		}
		t.Skip(msg)
	}
	return prom, pgw
}

// freePort is a loopback port nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is a process the test started, its output in a log file.
type server struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func start(t *testing.T, dir, name string, args ...string) *server {
	t.Helper()
	log := filepath.Join(dir, filepath.Base(name)+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = f, f, dir
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	s := &server{name: filepath.Base(name), cmd: cmd, log: log, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop ends the process (SIGTERM, SIGKILL after 5 s) and checks that it is
// gone. Calling it again does nothing.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	pid := s.cmd.Process.Pid
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Errorf("%s (pid %d) ignored SIGTERM for 5 s; killed", s.name, pid)
	}
	s.cmd = nil
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("%s (pid %d) still there after it exited: kill -0 says %v", s.name, pid, err)
	}
}

func (s *server) tail() string {
	b, _ := os.ReadFile(s.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return s.name + " log:\n" + strings.Join(lines, "\n")
}

// waitFor polls cond every 200 ms until it holds or the deadline passes.
func waitFor(ctx context.Context, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func query(base, q string) ([]promSample, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %s: %s: %w", q, resp.Status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, r.Error)
	}
	return r.Data.Result, nil
}

// TestPrometheusPushgateway pushes the fixture to a real Pushgateway with
// `cnibench export --push`, lets a real Prometheus scrape it, and finds
// every run's median, interval bounds and n through the query API.
func TestPrometheusPushgateway(t *testing.T) {
	prom, pgw := needServers(t)
	dir := t.TempDir()
	pgPort, promPort := freePort(t), freePort(t)
	pgAddr := fmt.Sprintf("127.0.0.1:%d", pgPort)
	promBase := fmt.Sprintf("http://127.0.0.1:%d", promPort)
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs:
      - targets: ['%s']
`, pgAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pg := start(t, dir, pgw, "--web.listen-address="+pgAddr, "--persistence.file="+filepath.Join(dir, "pushgateway.data"))
	pr := start(t, dir, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ready := func(u string) func() (bool, error) {
		return func() (bool, error) {
			resp, err := http.Get(u)
			if err != nil {
				return false, err
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", u, resp.Status)
		}
	}
	if err := waitFor(ctx, ready("http://"+pgAddr+"/-/ready")); err != nil {
		t.Fatalf("pushgateway not ready: %v\n%s", err, pg.tail())
	}

	_, stderr, code := clitest.Execute(t, NewCommand, "--push", "http://"+pgAddr, "--job", "cnibench-it", fixture)
	if code != 0 {
		t.Fatalf("export --push: exit %d: %s", code, stderr)
	}

	set, err := result.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	// What must arrive: every run's summaries with n > 0, four stats each.
	type key struct{ family, datapath, stat string }
	want := map[key]float64{}
	for _, r := range set.Runs {
		for metric, s := range r.Summary {
			if s.N == 0 {
				continue
			}
			f := export.FamilyName(metric)
			want[key{f, r.Labels["datapath"], "median"}] = s.Median
			want[key{f, r.Labels["datapath"], "ci95_low"}] = s.CI95Low
			want[key{f, r.Labels["datapath"], "ci95_high"}] = s.CI95High
			want[key{f, r.Labels["datapath"], "n"}] = float64(s.N)
		}
	}
	q := `{__name__=~"cnibench_.+",job="cnibench-it"}`
	var got []promSample
	err = waitFor(ctx, func() (bool, error) {
		got, err = query(promBase, q)
		return err == nil && len(got) >= len(want), err
	})
	if err != nil {
		t.Fatalf("Prometheus has %d of %d series after waiting: %v\n%s\n%s", len(got), len(want), err, pr.tail(), pg.tail())
	}
	if len(got) != len(want) {
		t.Errorf("Prometheus has %d series, want %d", len(got), len(want))
	}
	zone := set.Runs[1].Labels["node.zone"]
	for _, s := range got {
		m := s.Metric
		k := key{m["__name__"], m["datapath"], m["stat"]}
		v, ok := want[k]
		if !ok {
			t.Errorf("unexpected series %v", m)
			continue
		}
		delete(want, k)
		str, _ := s.Value[1].(string)
		if f, err := strconv.ParseFloat(str, 64); err != nil || f != v {
			t.Errorf("%v = %q, want %v (results.json)", m, str, v)
		}
		if m["instance"] != "lab-host" || m["host"] != "lab-host" || m["test"] != "tcp_rr" {
			t.Errorf("%v: want instance and host lab-host, test tcp_rr", m)
		}
		if m["datapath"] == "ebpf-host-routing" && m["node_zone"] != zone {
			t.Errorf("%v: node_zone %q, want %q", m, m["node_zone"], zone)
		}
	}
	for k := range want {
		t.Errorf("missing in Prometheus: %v", k)
	}

	pr.stop(t)
	pg.stop(t)
}
