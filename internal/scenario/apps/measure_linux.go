package apps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// batchBytes is about how much one curl process downloads (MaxBatch
// transfers at most): small files go many to a process, as a client
// fetching objects would, and no process start shows in the window's
// throughput more than once per batch.
const (
	batchBytes = 16 << 20
	MaxBatch   = 100
)

// batchOf is how many transfers one client process makes: curl many
// (keep-alive or not, connection reuse is the protocol's, not the
// process's), scp one (every scp is its own SSH session).
func batchOf(app string, size int64) int {
	if app == SCP {
		return 1
	}
	return int(min(max(batchBytes/size, 1), MaxBatch))
}

// Measure implements scenario.Measurer: transfers of the cell's file
// repeated back to back, first for the warm-up (not measured), then for
// the window; the window's metrics come from the transfers that ran in it
// and the CPU the client and server processes used meanwhile.
func (pr *prepared) Measure(ctx context.Context, c scenario.Cell, w scenario.Window) (*result.Result, error) {
	size, err := pr.s.sizeOf(c)
	if err != nil {
		return nil, err
	}
	keepAlive := c.Labels[LabelKeepAlive] != "off"
	n := batchOf(pr.app, size)
	file := fileName(c.Labels[LabelSize])
	for end := time.Now().Add(w.Warmup); w.Warmup > 0 && time.Now().Before(end); {
		if _, _, err := pr.batch(ctx, file, size, keepAlive, n); err != nil {
			return nil, pr.why(ctx, err)
		}
	}
	cpu0, err := pr.serverCPU()
	if err != nil {
		return nil, fmt.Errorf("server CPU: %w", err)
	}
	start := time.Now()
	var win window
	for len(win.Transfers) == 0 || time.Since(start) < w.Duration {
		ts, cpu, err := pr.batch(ctx, file, size, keepAlive, n)
		if err != nil {
			return nil, pr.why(ctx, err)
		}
		win.Transfers = append(win.Transfers, ts...)
		win.ClientCPUSeconds += cpu
	}
	win.Seconds = time.Since(start).Seconds()
	cpu1, err := pr.serverCPU()
	if err != nil {
		return nil, fmt.Errorf("server CPU: %w", err)
	}
	win.ServerCPUSeconds = max(cpu1-cpu0, 0)
	m, err := win.metrics()
	if err != nil {
		return nil, err
	}
	cfg := map[string]string{
		"test":                   c.Test,
		"app":                    pr.app,
		"size_bytes":             strconv.FormatInt(size, 10),
		"transfers_per_process":  strconv.Itoa(n),
		"duration":               w.Duration.String(),
		"warmup":                 w.Warmup.String(),
		"app_transfer_time_from": "curl's time_total",
	}
	if pr.app == SCP {
		cfg["app_transfer_time_from"] = "scp's process start to exit (SSH handshake included), the file written to the run's temporary directory, its size checked, removed"
	}
	if pr.app == HTTP {
		cfg["keepalive"] = c.Labels[LabelKeepAlive]
	}
	return &result.Result{Schema: result.SchemaResult, Tool: buildinfo.Tool(), Start: start.UTC(), Config: cfg,
		Repeats: []result.Repeat{{Start: start.UTC(), DurationSec: win.Seconds, Metrics: m}}}, nil
}

// why says why a batch failed, with the daemon's state when it is gone.
func (pr *prepared) why(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if derr := pr.d.alive(); derr != nil {
		return errors.Join(err, derr)
	}
	return err
}

// batch runs one client process in the client pod: n transfers of file,
// each as the client reported it, and the process's CPU seconds (its
// rusage, children included).
func (pr *prepared) batch(ctx context.Context, file string, size int64, keepAlive bool, n int) ([]transfer, float64, error) {
	ip := pr.ep.ServerIP
	var cmd *exec.Cmd
	switch pr.app {
	case HTTP, FTP:
		args := []string{"-sS", "--max-time", "300", "-w", CurlFormat}
		url := "ftp://" + netip.AddrPortFrom(ip, FTPPort).String() + "/" + file
		if pr.app == HTTP {
			url = "http://" + netip.AddrPortFrom(ip, HTTPPort).String() + "/" + file
			args = append(args, "--fail")
			if !keepAlive {
				args = append(args, "-H", "Connection: close")
			}
		}
		for range n {
			args = append(args, "-o", "/dev/null", url)
		}
		cmd = exec.CommandContext(ctx, pr.bins["curl"], args...)
	case SCP:
		cmd = exec.CommandContext(ctx, pr.bins["scp"], "-q", "-F", "/dev/null",
			"-i", pr.l.path("client_key"), "-P", strconv.Itoa(SSHPort),
			"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
			"-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
			"root@"+ip.String()+":"+pr.l.path("files/"+file), pr.l.path("download-"+file))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // a killed scp's ssh may hold its pipes
	t0 := time.Now()
	if err := pr.clients.Start(pr.ep.Client, cmd, nil); err != nil {
		return nil, 0, err
	}
	err := cmd.Wait()
	el := time.Since(t0)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %v: %s", cmd.Args[0], err, firstLine(stderr.String()))
	}
	cpu := 0.0
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = tv(ru.Utime) + tv(ru.Stime)
	}
	if pr.app == SCP {
		// scp reports nothing per transfer: the file it wrote is checked
		// (and removed).
		dl := pr.l.path("download-" + file)
		st, err := os.Stat(dl)
		if err != nil {
			return nil, 0, fmt.Errorf("scp wrote no file: %w", err)
		}
		_ = os.Remove(dl)
		t := transfer{Seconds: el.Seconds(), Bytes: st.Size()}
		if err := checkTransfers(pr.app, []transfer{t}, size); err != nil {
			return nil, 0, err
		}
		return []transfer{t}, cpu, nil
	}
	ts, err := parseCurl(stdout.String())
	if err != nil {
		return nil, 0, err
	}
	if len(ts) != n {
		return nil, 0, fmt.Errorf("curl reported %d transfers, want %d", len(ts), n)
	}
	if err := checkTransfers(pr.app, ts, size); err != nil {
		return nil, 0, err
	}
	return ts, cpu, nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
