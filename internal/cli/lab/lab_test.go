package labcmd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/testutil"
)

func TestParseUpOptions(t *testing.T) {
	ok := []upFlags{
		{mtu: 1500},
		{mtu: 9000, datapaths: "baseline, vxlan", runID: "abc1"},
		{mtu: 1500, wire: "veth"},
	}
	for _, f := range ok {
		if _, err := parseUpOptions(&f); err != nil {
			t.Errorf("parseUpOptions(%+v): %v", f, err)
		}
	}
	for _, tc := range []struct {
		f    upFlags
		want string
	}{
		{upFlags{mtu: 70000}, "--mtu 70000: must be between 1280 and 65535"},
		{upFlags{mtu: 1000}, "--mtu 1000"},
		{upFlags{mtu: 1500, datapaths: "baseline,nope"}, `unknown datapath "nope"`},
		{upFlags{mtu: 1500, datapaths: "vxlan,vxlan"}, "listed twice"},
		{upFlags{mtu: 1500, runID: "Bad-Id"}, "--run-id"},
		{upFlags{mtu: 1500, wire: "fiber"}, "--wire fiber: must be one of nic, veth"},
	} {
		_, err := parseUpOptions(&tc.f)
		var ue *clierr.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseUpOptions(%+v) = %v; want a usage error containing %q", tc.f, err, tc.want)
		}
	}
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	err := c.ExecuteContext(context.Background())
	t.Logf("lab %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), err
}

// TestUpStatusDown runs the commands as a user would: up leaves the lab,
// status shows it, down removes it.
func TestUpStatusDown(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	runID, err := lab.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = lab.Cleanup(context.Background(), lab.CleanupOptions{RunID: runID, Force: true}) })

	out, err := run(t, "up", "--datapaths", "baseline,bridge,netkit", "--mtu", "9000", "--run-id", runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cnb-" + runID + "-bridge-client1", "198.19.2.20", "9000", "skipped netkit:"} {
		if !strings.Contains(out, want) {
			t.Errorf("lab up output lacks %q", want)
		}
	}
	out, err = run(t, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(out, runID, "up (lab up)") {
		t.Errorf("lab status does not show run %s as up", runID)
	}
	out, err = run(t, "down", "--run-id", runID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "removed lab "+runID) {
		t.Errorf("lab down output: %q", out)
	}
	left, _ := filepath.Glob(filepath.Join(lab.NetnsDir, lab.Prefix+runID+"-*"))
	if len(left) > 0 {
		t.Errorf("left after lab down: %v", left)
	}
	if _, err := os.Stat(lab.StatePath(runID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left after lab down: %v", err)
	}
}

// hasLine tells whether a line of out starts with prefix and contains s.
func hasLine(out, prefix, s string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, s) {
			return true
		}
	}
	return false
}
