package wgnodecmd_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/app"
	"github.com/cnibench/cnibench/internal/cli"
	"github.com/cnibench/cnibench/internal/cli/clierr"
)

// runApp runs a cnibench command line through the top level with stdin.
func runApp(stdin string, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	err := app.Run(context.Background(), logger, cli.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), clierr.ExitCode(err)
}

const keys = `"private_key":"qBTxwXC2fDLGLjkkbr0s5TDfTHaQCoqIlq2JE6PwJ1k=","peer_public_key":"Xu9QGRWz8MWRXzlXz7RbLNgUVumNJFWJCBaK7Vm0AlY="`

// A bad config is one line on stderr naming the field, exit code 2, and
// nothing is created.
func TestBadConfigIsOneLine(t *testing.T) {
	cases := []struct{ stdin, want string }{
		{"", "config on stdin: empty"},
		{"{", "config on stdin: invalid JSON"},
		{`{"iface":"wg0"}`, "private_key: missing"},
		{`{` + keys + `,"allowed_ips":["198.19.2.0/24"]}`, "iface: missing"},
		{`{"iface":"wg0",` + keys + `}`, "allowed_ips: missing"},
		{`{"iface":"wg0",` + keys + `,"allowed_ips":["198.19.2.0/24"],"mtu":"big"}`, "mtu: want an integer, got string"},
		{`{"iface":"wg0",` + keys + `,"allowed_ips":["198.19.2.0/24"],"peer_endpoint":"node2"}`, `peer_endpoint: "node2" is not ADDRESS:PORT`},
		{`{"iface":"wg0",` + keys + `,"allowed_ips":["198.19.2.0/24"],"privatekey":"x"}`, `unknown field "privatekey"`},
	}
	for _, c := range cases {
		out, errOut, code := runApp(c.stdin, "wg-node")
		if code != 2 || out != "" {
			t.Errorf("stdin %.50q: exit %d, stdout %q; want 2 and nothing", c.stdin, code, out)
		}
		if !strings.HasPrefix(errOut, "cnibench: wg-node: ") || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("stdin %.50q: stderr %q, want one line naming %q", c.stdin, errOut, c.want)
		}
	}
}

func TestHiddenAndNoArgs(t *testing.T) {
	out, _, code := runApp("", "--help")
	if code != 0 || strings.Contains(out, "wg-node") {
		t.Errorf("--help (exit %d) lists the hidden wg-node:\n%s", code, out)
	}
	_, errOut, code := runApp("", "wg-node", "PRIVATEKEY")
	if code != 2 || !strings.Contains(errOut, "unknown command") && !strings.Contains(errOut, "accepts 0 arg") {
		t.Errorf("wg-node with an argument: exit %d, %q; want a usage error (keys only on stdin)", code, errOut)
	}
}
