package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tools holds the absolute paths of every program the harness runs.
type Tools struct {
	Cnibench, HTTPServer string // built from this tree
	Netperf, Netserver   string
	Iperf3, Hey          string
	Time                 string // GNU time, "" when not installed
}

func prepareTools(ctx context.Context, o options, root, tmp string) (*Tools, error) {
	t := &Tools{
		Cnibench:   filepath.Join(tmp, "cnibench"),
		HTTPServer: filepath.Join(tmp, "httpserver"),
	}
	for _, b := range []struct{ out, pkg string }{
		{t.Cnibench, "./cmd/cnibench"},
		{t.HTTPServer, "./bench/httpserver"},
	} {
		logf("go build -o %s %s", b.out, b.pkg)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w: %s", b.pkg, err, out)
		}
	}

	peers := o.peersDir
	if !filepath.IsAbs(peers) {
		peers = filepath.Join(root, peers)
	}
	t.Netperf = filepath.Join(peers, "netperf")
	t.Netserver = filepath.Join(peers, "netserver")
	if !isExec(t.Netperf) || !isExec(t.Netserver) {
		logf("netperf/netserver missing in %s: building with %s", peers, o.buildScript)
		cmd := exec.CommandContext(ctx, "bash", o.buildScript, peers)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("build peers (%s %s): %w", o.buildScript, peers, err)
		}
		if !isExec(t.Netperf) || !isExec(t.Netserver) {
			return nil, fmt.Errorf("%s did not produce netperf and netserver in %s", o.buildScript, peers)
		}
	}

	var missing []string
	for _, p := range []string{"iperf3", "hey"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		if o.noInstall {
			return nil, fmt.Errorf("missing %s (and -no-install given): apt-get install -y %s", strings.Join(missing, " "), strings.Join(missing, " "))
		}
		if err := aptInstall(ctx, missing); err != nil {
			return nil, err
		}
	}
	var err error
	if t.Iperf3, err = exec.LookPath("iperf3"); err != nil {
		return nil, err
	}
	if t.Hey, err = exec.LookPath("hey"); err != nil {
		return nil, err
	}
	if isExec("/usr/bin/time") {
		t.Time = "/usr/bin/time"
	} else {
		logf("GNU time (/usr/bin/time) not installed: no client CPU/RSS cross-check (apt-get install -y time)")
	}
	need := []string{"ip", "ss", "sysctl"}
	if o.pin != "none" {
		need = append(need, "taskset")
	}
	for _, p := range need {
		if _, err := exec.LookPath(p); err != nil {
			return nil, fmt.Errorf("%s not found (iproute2/procps needed)", p)
		}
	}
	return t, nil
}

func aptInstall(ctx context.Context, pkgs []string) error {
	logf("apt-get install -y %s", strings.Join(pkgs, " "))
	install := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}
	if err := install(); err == nil {
		return nil
	}
	logf("apt-get install failed; apt-get update and retry")
	upd := exec.CommandContext(ctx, "apt-get", "update")
	upd.Stdout, upd.Stderr = os.Stderr, os.Stderr
	if err := upd.Run(); err != nil {
		return fmt.Errorf("apt-get update: %w", err)
	}
	if err := install(); err != nil {
		return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// versions records what was run, for the report.
func (t *Tools) versions(ctx context.Context) map[string]string {
	v := map[string]string{}
	first := func(name string, args ...string) string {
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("unknown (%v)", err)
		}
		s := strings.TrimSpace(string(out))
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[:i]
		}
		return s
	}
	v["cnibench"] = first(t.Cnibench, "version")
	v["netperf"] = first(t.Netperf, "-V")
	v["iperf3"] = first(t.Iperf3, "--version")
	v["hey"] = first("dpkg-query", "-W", "-f", "${Package} ${Version}", "hey")
	v["go"] = first("go", "version")
	return v
}
