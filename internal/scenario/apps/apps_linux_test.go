package apps

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	_ "github.com/cnibench/cnibench/internal/lab/datapaths" // the standard datapaths register themselves
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/testutil"
	"github.com/cnibench/cnibench/pkg/result"
)

// testLab gives the scenario a lab's datapath (its LabAccess) without
// the suite.
type testLab struct {
	backend.Deployment
	l *lab.Lab
}

func (d testLab) LabAccess(datapath string) (*lab.Access, error) {
	dp, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return nil, err
	}
	ep, ok := topo.Path(lab.CrossNode)
	if !ok {
		return nil, errors.New("no cross-node path")
	}
	return &lab.Access{Endpoint: ep, Topology: topo, Datapath: dp}, nil
}

// hostState is what the scenario must leave as it found it on the host:
// the daemons' packaged configuration, the privilege-separation directory,
// the daemons' processes and the listeners of the host's namespace.
type hostState struct {
	files     map[string]string // path → sha256 ("" for a missing file)
	runSSHD   bool
	daemons   []int
	listeners []int
}

func snapshotHost(t *testing.T) hostState {
	t.Helper()
	h := hostState{files: map[string]string{}}
	for _, root := range []string{"/etc/nginx", "/etc/vsftpd.conf", "/etc/ssh"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					h.files[p] = ""
					return nil
				}
				return err
			}
			if d.Type().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				h.files[p] = hex.EncodeToString(sum[:])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := os.Stat("/run/sshd")
	h.runSSHD = err == nil
	h.daemons = daemonPIDs(t)
	h.listeners = hostListeners(t)
	return h
}

// daemonPIDs are the processes named nginx, vsftpd or sshd in the host's
// network namespace.
func daemonPIDs(t *testing.T) []int {
	t.Helper()
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		ns, _ := os.Readlink("/proc/" + e.Name() + "/ns/net")
		switch strings.TrimSpace(string(comm)) {
		case "nginx", "vsftpd", "sshd":
			if ns == self {
				out = append(out, pid)
			}
		}
	}
	slices.Sort(out)
	return out
}

// hostListeners are the scenario's ports listening in the host's network
// namespace (there must be none).
func hostListeners(t *testing.T) []int {
	t.Helper()
	var out []int
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			port, _ := strconv.ParseUint(hexPort, 16, 16)
			switch p := int(port); {
			case p == HTTPPort, p == FTPPort, p == SSHPort, p >= PasvMinPort && p <= PasvMaxPort:
				out = append(out, p)
			}
		}
		fh.Close()
	}
	return out
}

func (h hostState) diff(t *testing.T, after hostState) {
	t.Helper()
	if !maps.Equal(h.files, after.files) {
		t.Errorf("the host's daemon configuration changed: %v → %v", h.files, after.files)
	}
	if h.runSSHD != after.runSSHD {
		t.Errorf("/run/sshd existed %v before, %v after", h.runSSHD, after.runSSHD)
	}
	if !slices.Equal(h.daemons, after.daemons) {
		t.Errorf("daemons in the host's namespace: %v before, %v after", h.daemons, after.daemons)
	}
	if len(after.listeners) > 0 {
		t.Errorf("the scenario's ports listen in the host's namespace: %v", after.listeners)
	}
}

// TestAppsOnLab runs every application on veth-routing with small files
// and short windows: each cell measures transfers, throughput, latency
// percentiles and both ends' CPU; the daemons run only in the server pod's
// namespace and are gone after Close and after an interrupt; the host's
// daemon configuration, /run/sshd, processes and listeners are untouched.
func TestAppsOnLab(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedAnyProgram(t, "nginx", "/usr/sbin/nginx")
	testutil.NeedAnyProgram(t, "vsftpd", "/usr/sbin/vsftpd")
	testutil.NeedAnyProgram(t, "sshd", "/usr/sbin/sshd")
	testutil.NeedProgram(t, "curl", "scp", "ssh", "ssh-keygen")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	l := upCheckedLab(ctx, t)
	env := scenario.Env{Deployment: testLab{l: l}, Datapath: "veth-routing"}
	s, err := New(Options{Sizes: []string{"4KiB", "1MiB"}})
	if err != nil {
		t.Fatal(err)
	}
	w := scenario.Window{Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond}
	for _, p := range s.Points() {
		if p.Skip != nil {
			t.Fatalf("%v: skipped: %v", p.Labels, p.Skip)
		}
		prep, err := s.Prepare(ctx, env, p)
		if err != nil {
			t.Fatalf("%v: %v", p.Labels, err)
		}
		pid := prep.(*prepared).d.cmd.Process.Pid
		if got := hostListeners(t); len(got) > 0 {
			t.Errorf("%v: listening in the host's namespace: %v", p.Labels, got)
		}
		for _, c := range s.Cells(p) {
			res, err := prep.(scenario.Measurer).Measure(ctx, c, w)
			if err != nil {
				t.Errorf("%v %v: %v", p.Labels, c.Labels, err)
				continue
			}
			m := res.Repeats[0].Metrics
			t.Logf("%s %v: %s, %.0f transfers/s, p50 %.0f µs, p99 %.0f µs, client CPU %.0f %%, server CPU %.0f %%",
				p.Labels[LabelApp], c.Labels, result.Format(result.ThroughputBitsPerSec, m[result.ThroughputBitsPerSec]),
				m[result.TransPerSec], m[result.LatencyUsP50], m[result.LatencyUsP99], m[result.ClientCPUPct], m[result.ServerCPUPct])
			if res.Schema != result.SchemaResult || res.Repeats[0].DurationSec < w.Duration.Seconds() ||
				m[result.ThroughputBitsPerSec] <= 0 || m[result.TransPerSec] <= 0 ||
				m[result.LatencyUsP50] <= 0 || m[result.LatencyUsP50] > m[result.LatencyUsP99] ||
				m[result.ClientCPUPct] <= 0 || m[result.ServerCPUPct] <= 0 {
				t.Errorf("%v %v: result %+v", p.Labels, c.Labels, res.Repeats[0])
			}
		}
		dir := prep.(*prepared).dir
		if _, err := prep.Close(ctx); err != nil {
			t.Errorf("%v: close: %v", p.Labels, err)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("%v: daemon %d still runs after Close", p.Labels, pid)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%v: %s left behind (%v)", p.Labels, dir, err)
		}
	}

	// An interrupted run (the suite's context cancelled) kills the daemon
	// even before Close.
	ictx, icancel := context.WithCancel(ctx)
	prep, err := s.Prepare(ictx, env, s.Points()[0])
	if err != nil {
		t.Fatal(err)
	}
	d := prep.(*prepared).d
	icancel()
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		t.Error("the daemon outlived the cancelled context by 5s")
	}
	if _, err := prep.Close(context.Background()); err != nil {
		t.Error(err)
	}
}

// upCheckedLab brings a veth-routing lab up for the test; at cleanup it
// takes the lab down and checks the host (daemon configuration, /run/sshd,
// processes, listeners) is as it was before.
func upCheckedLab(ctx context.Context, t *testing.T) *lab.Lab {
	t.Helper()
	before := snapshotHost(t)
	l := lab.New(nil)
	if err := l.Up(ctx, lab.Options{Datapaths: []string{"veth-routing"}}); err != nil {
		t.Fatalf("lab up: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("lab down: %v", err)
		}
		before.diff(t, snapshotHost(t))
	})
	return l
}
