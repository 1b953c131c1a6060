package testutil

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// packages names the Debian package that provides each external program the
// tests run (hack/deps.sh installs them), for the skip message.
var packages = map[string]string{
	"nft":                     "nftables",
	"nsenter":                 "util-linux",
	"ip":                      "iproute2",
	"iptables":                "iptables",
	"iptables-nft":            "iptables",
	"iptables-nft-restore":    "iptables",
	"iptables-legacy":         "iptables",
	"iptables-legacy-restore": "iptables",
	"ipset":                   "ipset",
	"pgrep":                   "procps",
	"time":                    "time",
	"chromium":                "chromium",
	"prometheus":              "prometheus",
	"prometheus-pushgateway":  "prometheus-pushgateway",
	"haproxy":                 "haproxy",
	"nginx":                   "nginx",
	"vsftpd":                  "vsftpd",
	"sshd":                    "openssh-server",
	"ssh-keygen":              "openssh-client",
	"scp":                     "openssh-client",
	"curl":                    "curl",
	"go":                      "a Go toolchain (hack/ensure-go.sh)",
}

// InCI reports whether the tests run in CI (CI set to a true value), where
// a test that cannot run for want of a program is a failure, not a skip.
func InCI() bool {
	v, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("CI")))
	return err == nil && v
}

// NeedProgram skips tb with the reason (and the package that provides it)
// unless every named program is on PATH; with CI=true it fails instead, so
// that CI can never pass a check that silently did not run. Run `make deps`
// (hack/deps.sh) to install them.
func NeedProgram(tb testing.TB, names ...string) {
	tb.Helper()
	needProgram(tb, exec.LookPath, InCI(), names...)
}

// NeedAnyProgram is NeedProgram for a program known under several names
// (or paths): it returns the first one found.
func NeedAnyProgram(tb testing.TB, names ...string) string {
	tb.Helper()
	return needAnyProgram(tb, exec.LookPath, InCI(), names...)
}

func needProgram(tb testing.TB, look func(string) (string, error), ci bool, names ...string) {
	tb.Helper()
	for _, n := range names {
		if _, err := look(n); err != nil {
			missing(tb, ci, n, err)
			return
		}
	}
}

func needAnyProgram(tb testing.TB, look func(string) (string, error), ci bool, names ...string) string {
	tb.Helper()
	var first error
	for _, n := range names {
		p, err := look(n)
		if err == nil {
			return p
		}
		if first == nil {
			first = err
		}
	}
	if len(names) > 0 {
		missing(tb, ci, strings.Join(names, " or "), first)
	}
	return ""
}

func missing(tb testing.TB, ci bool, name string, err error) {
	tb.Helper()
	prog := name
	if i := strings.IndexAny(prog, " "); i > 0 {
		prog = prog[:i]
	}
	if j := strings.LastIndex(prog, "/"); j >= 0 {
		prog = prog[j+1:]
	}
	pkg := packages[prog]
	if pkg == "" {
		pkg = "its Debian package"
	}
	msg := "needs " + name + " (" + pkg + "; `make deps` installs it): " + err.Error()
	if ci {
		tb.Fatalf("CI=true: a missing program fails the test instead of skipping it: %s", msg)
		return
	}
	tb.Skip(msg)
}
