package k8sagentcmd_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/cli/clitest"
	k8sagentcmd "github.com/cnibench/cnibench/internal/cli/k8sagent"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestProfileProbe: --probe answers with exit 0 whether it can sample,
// the reason in "error" when it cannot.
func TestProfileProbe(t *testing.T) {
	stdout, stderr, code := clitest.Execute(t, k8sagentcmd.NewCommand, "profile", "--probe")
	var rep agent.Profile
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 0 || stderr != "" || rep.Schema != agent.SchemaProfile || !rep.Probe {
		t.Fatalf("exit %d, stdout %q, stderr %q (%v)", code, stdout, stderr, err)
	}
	if perr := profile.Probe(); (perr == nil) != (rep.Error == "") {
		t.Errorf("probe error %q, the package's probe says %v", rep.Error, perr)
	}
}

// TestProfileStdinEOF samples until stdin ends, after "ready", and checks
// that the JSON carries a timestamped profile.
func TestProfileStdinEOF(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.SkipIfNotSupported(t, profile.Probe(), profile.ErrNotSupported)
	stdinR, stdinW := io.Pipe()
	errR, errW := io.Pipe()
	var out bytes.Buffer
	c := k8sagentcmd.NewCommand(slog.New(slog.DiscardHandler), streams.IOStreams{In: stdinR, Out: &out, ErrOut: errW})
	c.SetArgs([]string{"profile", "--hz", "199", "--duration", "30s", "--stop-on-stdin-eof"})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		err := c.Execute()
		errW.Close()
		done <- err
	}()
	line, err := bufio.NewReader(errR).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("first stderr line %q (%v), want ready", line, err)
	}
	go io.Copy(io.Discard, errR)
	time.Sleep(300 * time.Millisecond)
	stdinW.Close()
	if err := <-done; err != nil {
		t.Fatalf("profile: %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("stdin's end did not stop it: %v", time.Since(start))
	}
	var rep agent.Profile
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Stopped != agent.ProfileStoppedStdin || rep.Hz != 199 || rep.Samples == 0 || rep.Start.IsZero() {
		t.Errorf("result %+v", strings.TrimSpace(string(out.Bytes()[:min(out.Len(), 300)])))
	}
	p, err := rep.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Crop(p, rep.Start.Add(-time.Second), time.Now()); err != nil {
		t.Errorf("crop the agent's profile: %v", err)
	}
}
