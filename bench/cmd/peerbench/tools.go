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
	Go                   string // the go command that builds cnibench
	Cnibench, HTTPServer string // built from this tree
	Netperf, Netserver   string // "" when no selected comparison needs netperf
	Iperf3, Hey, Wrk     string // "" when not needed
	Time                 string // GNU time, "" when not installed
	// Dir is the run's temporary directory (removed at the end): the
	// built binaries, and files trials write (CPU profiles).
	Dir string
}

// peersNeeded returns the peers (netperf, iperf3, hey, wrk) that the
// selected comparisons run.
func peersNeeded(tests []string) map[string]bool {
	need := map[string]bool{}
	for _, t := range tests {
		for _, c := range comparisonsByTest(t) {
			need[c.Peer] = true
		}
	}
	return need
}

func prepareTools(ctx context.Context, o options, root, tmp string) (*Tools, error) {
	t := &Tools{
		Dir:        tmp,
		Go:         o.goBin,
		Cnibench:   filepath.Join(tmp, "cnibench"),
		HTTPServer: filepath.Join(tmp, "httpserver"),
	}
	// The commit goes into cnibench's version, as `make build` puts it, so
	// that reports say which code they measured.
	ldflags := ""
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		ldflags = "-X github.com/cnibench/cnibench/internal/buildinfo.Commit=" + strings.TrimSpace(string(out))
	}
	for _, b := range []struct{ out, pkg string }{
		{t.Cnibench, "./cmd/cnibench"},
		{t.HTTPServer, "./bench/httpserver"},
	} {
		logf("go build -o %s %s", b.out, b.pkg)
		cmd := exec.CommandContext(ctx, t.Go, "build", "-ldflags", ldflags, "-o", b.out, b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w: %s", b.pkg, err, out)
		}
	}

	need := peersNeeded(splitList(o.tests))
	if need["netperf"] {
		np, err := locateNetperf(o.peersDir, o.buildScript, root, exec.LookPath, isExec)
		if err != nil {
			return nil, err
		}
		if np.BuildInto != "" {
			logf("netperf/netserver missing: building them into %s with %s", np.BuildInto, np.Script)
			cmd := exec.CommandContext(ctx, "bash", np.Script, np.BuildInto)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("build peers (%s %s): %w", np.Script, np.BuildInto, err)
			}
			if !isExec(np.Netperf) || !isExec(np.Netserver) {
				return nil, fmt.Errorf("%s did not produce netperf and netserver in %s", np.Script, np.BuildInto)
			}
		}
		t.Netperf, t.Netserver = np.Netperf, np.Netserver
		logf("netperf: %s, netserver: %s", t.Netperf, t.Netserver)
	}

	// ensurePrograms (run) has installed or refused what is missing.
	var err error
	if need["iperf3"] {
		if t.Iperf3, err = exec.LookPath("iperf3"); err != nil {
			return nil, fmt.Errorf("iperf3: %w; %s", err, howToGet([]string{"iperf3"}))
		}
	}
	if need["hey"] {
		if t.Hey, err = exec.LookPath("hey"); err != nil {
			return nil, fmt.Errorf("hey: %w; %s", err, howToGet([]string{"hey"}))
		}
	}
	if need["wrk"] {
		if t.Wrk, err = exec.LookPath("wrk"); err != nil {
			return nil, fmt.Errorf("wrk: %w; %s", err, howToGet([]string{"wrk"}))
		}
	}
	if isExec("/usr/bin/time") {
		t.Time = "/usr/bin/time"
	} else {
		logf("GNU time (/usr/bin/time) not installed: no client CPU/RSS cross-check (apt-get install -y time)")
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
	if t.Netperf != "" {
		v["netperf"] = first(t.Netperf, "-V") + " (" + t.Netperf + ")"
	}
	if t.Iperf3 != "" {
		v["iperf3"] = first(t.Iperf3, "--version")
	}
	if t.Hey != "" {
		v["hey"] = first("dpkg-query", "-W", "-f", "${Package} ${Version}", "hey")
		if strings.HasPrefix(v["hey"], "unknown") {
			v["hey"] = t.Hey + " (not a Debian package)"
		}
	}
	if t.Wrk != "" {
		v["wrk"] = first("dpkg-query", "-W", "-f", "${Package} ${Version}", "wrk")
		if strings.HasPrefix(v["wrk"], "unknown") {
			v["wrk"] = first(t.Wrk, "-v") + " (" + t.Wrk + ")"
		}
	}
	v["go"] = first(t.Go, "version")
	return v
}
