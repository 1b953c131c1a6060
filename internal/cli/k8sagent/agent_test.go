package k8sagentcmd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	k8sagentcmd "github.com/cnibench/cnibench/internal/cli/k8sagent"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/kube/agent"
)

func TestCommandTree(t *testing.T) {
	c := k8sagentcmd.NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{})
	if c.Name() != "agent" || !c.Hidden {
		t.Errorf("got %q hidden=%v, want a hidden agent", c.Name(), c.Hidden)
	}
	var names []string
	for _, sub := range c.Commands() {
		names = append(names, sub.Name())
	}
	want := []string{"capture", "cgroup", "cni-conf", "connect", "egress-filter", "idle", "inspect", "netstat", "profile", "proxy-mode", "watch"}
	if !slices.Equal(names, want) {
		t.Errorf("subcommands %v, want %v", names, want)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in the one-line message
	}{
		{[]string{"inspect", "--addr", "10.0.0"}, "--addr"},
		{[]string{"cni-conf", "--dir", ""}, "--dir"},
		{[]string{"cgroup"}, "--pod-uid"},
		{[]string{"cgroup", "--pod-uid", "../etc"}, "--pod-uid"},
		{[]string{"cgroup", "--pod-uid", "a", "--root", ""}, "--root"},
		{[]string{"cgroup", "--cgroup", "../etc"}, "--cgroup \"../etc\""},
		{[]string{"cgroup", "--cgroup", "/system.slice"}, "--cgroup"},
		{[]string{"cgroup", "--pod-uid", "a", "--root", " /sys/fs/cgroup"}, "--root \" /sys/fs/cgroup\": must name a directory"},
		{[]string{"cni-conf", "--dir", "/etc/cni\n"}, "--dir \"/etc/cni\\n\": must name a directory"},
		{[]string{"proxy-mode", "--url", "localhost:10249"}, "--url \"localhost:10249\": want an http:// or https:// URL"},
		{[]string{"proxy-mode", "--url", "file:///etc/passwd"}, "--url"},
		{[]string{"proxy-mode", "--url", "http://"}, "--url"},
		{[]string{"connect"}, "--target"},
		{[]string{"connect", "--target", "10.0.0.1"}, "--target"},
		{[]string{"connect", "--target", "10.0.0.1:0"}, "--target"},
		{[]string{"connect", "--target", "10.0.0.1:80", "--count", "0"}, "--count"},
		{[]string{"connect", "--target", "10.0.0.1:80", "--timeout", "0s"}, "--timeout"},
		{[]string{"connect", "--target", "10.0.0.1:80", "--timeout", "soon"}, "--timeout"},
		{[]string{"capture"}, "--iface"},
		{[]string{"capture", "--iface", "lo", "--duration", "-1s"}, "--duration"},
		{[]string{"capture", "--iface", "lo", "--ring-size", "1M"}, "--ring-size"},
		{[]string{"capture", "--iface", "lo", "--ring-size", "3000K"}, "--ring-size"},
		{[]string{"idle", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"profile", "--hz", "0"}, "--hz"},
		{[]string{"profile", "--hz", "20000"}, "--hz"},
		{[]string{"profile", "--duration", "0s"}, "--duration"},
		{[]string{"profile", "--duration", "2h"}, "--duration"},
		{[]string{"profile", "--duration", "soon"}, "--duration"},
		{[]string{"profile", "--probe", "--hz", "-1"}, "--hz"},
		{[]string{"watch"}, "--target"},
		{[]string{"watch", "--target", "10.0.0.1:80", "--want", "gone"}, "--want"},
		{[]string{"watch", "--target", "10.0.0.1:80", "--interval", "1ns"}, "--interval"},
		{[]string{"watch", "--target", "10.0.0.1:80", "--wait", "0s"}, "--wait"},
		{[]string{"watch", "--target", "10.0.0.1:80", "--wait", "1s", "--confirm", "2s"}, "--confirm"},
		{[]string{"watch", "--target", "10.0.0.1:80", "--allowed", "x"}, "--allowed"},
		{[]string{"egress-filter"}, "--mechanism"},
		{[]string{"egress-filter", "--mechanism", "none", "--rules", "1"}, "--mechanism"},
		{[]string{"egress-filter", "--mechanism", "nftables", "--rules", "0"}, "--rules"},
		{[]string{"egress-filter", "--mechanism", "nftables", "--rules", "1", "--denied", "[::1]:80", "--allowed", "10.0.0.2:80"}, "--denied"},
		{[]string{"egress-filter", "--mechanism", "nftables", "--rules", "1", "--denied", "10.0.0.1:80", "--allowed", "x"}, "--allowed"},
		{[]string{"egress-filter", "--mechanism", "nftables", "--rules", "1", "--traversal", "some"}, "--traversal"},
	} {
		stdout, stderr, code := clitest.Execute(t, k8sagentcmd.NewCommand, c.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line naming %s", c.args, code, stdout, stderr, c.want)
		}
	}
}

// TestJSONShapes runs each JSON probe and checks its schema and keys.
func TestJSONShapes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	root := t.TempDir()
	pod := filepath.Join(root, "kubepods", "pod1234")
	if err := os.MkdirAll(pod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "system.slice", "kube-proxy.service"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"cgroup.controllers": "cpu memory\n", "kubepods/pod1234/cpu.stat": "usage_usec 7\n",
		"system.slice/kube-proxy.service/cpu.stat": "usage_usec 9\n", "system.slice/kube-proxy.service/memory.current": "50\n",
		"system.slice/kube-proxy.service/memory.stat": "inactive_file 10\n",
		"kubepods/pod1234/memory.current":             "100\n", "kubepods/pod1234/memory.stat": "inactive_file 30\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cniDir := filepath.Join("..", "..", "kube", "agent", "testdata", "cni", "bridge")
	for _, c := range []struct {
		args   []string
		schema string
		keys   []string
		check  func(string) bool
	}{
		{[]string{"inspect"}, agent.SchemaInspect, []string{"links", "encapsulation"}, func(out string) bool {
			var in agent.Inspect
			return json.Unmarshal([]byte(out), &in) == nil && slices.ContainsFunc(in.Links, func(l agent.Link) bool { return l.Name == "lo" })
		}},
		{[]string{"cni-conf", "--dir", cniDir}, agent.SchemaCNIConf, []string{"dir", "files", "in_use", "plugins_in_use", "mtu"}, func(out string) bool {
			var c agent.CNIConf
			return json.Unmarshal([]byte(out), &c) == nil && c.InUse == "10-bridge.conflist" && c.MTU == 1450
		}},
		{[]string{"cni-conf", "--dir", filepath.Join(root, "missing")}, agent.SchemaCNIConf, []string{"error", "files"}, nil},
		{[]string{"cgroup", "--root", root, "--pod-uid", "1234", "--pod-uid", "5678,9abc"}, agent.SchemaCgroup, []string{"root", "layout", "pods"}, func(out string) bool {
			var r agent.CgroupReport
			return json.Unmarshal([]byte(out), &r) == nil && len(r.Pods) == 3 && r.Pods[0].CPUUsageNanos == 7000 &&
				r.Pods[0].MemoryWorkingSetBytes == 70 && r.Pods[0].TimeUnixNano > 0 && r.Pods[1].Error != "" && r.Pods[2].UID == "9abc"
		}},
		{[]string{"cgroup", "--root", root, "--cgroup", "system.slice/kube-proxy.service", "--cgroup", "system.slice/none.service"}, agent.SchemaCgroup,
			[]string{"root", "layout", "pods", "cgroups"}, func(out string) bool {
				var r agent.CgroupReport
				return json.Unmarshal([]byte(out), &r) == nil && len(r.Pods) == 0 && len(r.Cgroups) == 2 &&
					r.Cgroups[0].Path == "system.slice/kube-proxy.service" && r.Cgroups[0].CPUUsageNanos == 9000 &&
					r.Cgroups[0].MemoryWorkingSetBytes == 40 && r.Cgroups[0].Error == "" && r.Cgroups[1].Error != ""
			}},
		{[]string{"connect", "--target", ln.Addr().String(), "--count", "2"}, agent.SchemaConnect,
			[]string{"target", "attempts", "connected", "errors", "rtt_us"}, func(out string) bool {
				var r agent.Connect
				return json.Unmarshal([]byte(out), &r) == nil && r.Attempts == 2 && r.Connected == 2 && len(r.RTTMicros) == 2
			}},
	} {
		stdout, stderr, code := clitest.Execute(t, k8sagentcmd.NewCommand, c.args...)
		var m map[string]any
		if err := json.Unmarshal([]byte(stdout), &m); err != nil || code != 0 || stderr != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q (%v)", c.args, code, stderr, stdout, err)
			continue
		}
		if m["schema"] != c.schema {
			t.Errorf("%v: schema %v, want %s", c.args, m["schema"], c.schema)
		}
		for _, k := range c.keys {
			if _, ok := m[k]; !ok {
				t.Errorf("%v: no %q in %s", c.args, k, stdout)
			}
		}
		if c.check != nil && !c.check(stdout) {
			t.Errorf("%v: unexpected %s", c.args, stdout)
		}
	}
}

// TestCaptureBadIface: a capture that cannot start prints the JSON with
// its error and exits 1.
func TestCaptureBadIface(t *testing.T) {
	stdout, stderr, code := clitest.Execute(t, k8sagentcmd.NewCommand, "capture", "--iface", "nosuch0", "--duration", "1s")
	var rep agent.Capture
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 1 || rep.Schema != agent.SchemaCapture ||
		rep.Error == "" || strings.Contains(stderr, "ready") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// runIdle starts `agent idle` with ctx and returns its first stderr line
// and the command's result.
func runIdle(t *testing.T, ctx context.Context) (string, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	c := k8sagentcmd.NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{Out: io.Discard, ErrOut: pw})
	c.SetArgs([]string{"idle"})
	done := make(chan error, 1)
	go func() {
		err := c.ExecuteContext(ctx)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first stderr line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	return line, done
}

func TestIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	line, done := runIdle(t, ctx)
	if line != "ready\n" {
		t.Errorf("first line %q, want ready", line)
	}
	select {
	case err := <-done:
		t.Fatalf("idle ended before it was stopped: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("idle: %v, want nil (exit 0)", err)
	}
}

// TestIdleSIGTERM sends this process SIGTERM while idle waits: idle
// catches it and ends cleanly (the pods' main process).
func TestIdleSIGTERM(t *testing.T) {
	line, done := runIdle(t, context.Background())
	if line != "ready\n" {
		t.Fatalf("first line %q, want ready", line)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("idle: %v, want nil (exit 0)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("idle did not end on SIGTERM")
	}
}
