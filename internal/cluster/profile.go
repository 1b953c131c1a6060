package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/profile"
	"github.com/cnibench/cnibench/pkg/result"
)

// Bounds of the node profiles (variables: tests shorten them).
var (
	// profileReady is how long an agent has to start sampling.
	profileReady = 30 * time.Second
	// profileMargin is added to the client's deadline for the agent's
	// own bound (it normally stops when its stdin is closed), and again
	// for its exec's deadline (symbolising and sending the profile).
	profileMargin = time.Minute
	// profileProbeTimeout bounds the agent's probe.
	profileProbeTimeout = 30 * time.Second
)

// profState is the cached answer of CanProfile.
type profState struct {
	once sync.Once
	why  error
}

// profHost is a node whose host pod samples it.
type profHost struct{ short, node string }

// profHosts are the host pods that sample the client's and the server's
// nodes (one when they are the same node).
func (d *Deployment) profHosts() []profHost {
	hs := []profHost{{podHostA, d.client.Name}}
	if d.server.Name != d.client.Name {
		hs = append(hs, profHost{podHostB, d.server.Name})
	}
	return hs
}

// CanProfile implements backend.CPUProfiler: the nodes are sampled from
// the privileged host pods, so it needs them, and their probe (asked
// once) must say that perf_event_open works there. The error wraps
// backend.ErrNotSupported with the reason.
func (d *Deployment) CanProfile() error {
	if d.noHost != "" {
		return fmt.Errorf("%w: the nodes are sampled from the privileged host pods, which do not run: %s", backend.ErrNotSupported, d.noHost)
	}
	d.prof.once.Do(func() { d.prof.why = d.probeProfile(context.Background()) })
	return d.prof.why
}

func (d *Deployment) probeProfile(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, profileProbeTimeout)
	defer cancel()
	for _, h := range d.profHosts() {
		var rep agent.Profile
		if err := d.agentJSON(ctx, h.short, []string{"profile", "--probe"}, &rep); err != nil {
			return fmt.Errorf("%w: the CPU sampler's probe in host pod %s (node %s) failed: %v", backend.ErrNotSupported, h.short, h.node, err)
		}
		if rep.Schema != agent.SchemaProfile {
			return fmt.Errorf("%w: the CPU sampler's probe in host pod %s answered schema %q: the image's cnibench is older than this one (rebuild it)", backend.ErrNotSupported, h.short, rep.Schema)
		}
		if rep.Error != "" {
			return fmt.Errorf("%w: node %s cannot be sampled from its privileged host pod: %s (the node's kernel.perf_event_paranoid, or a container runtime whose seccomp profile refuses perf_event_open even to privileged pods)",
				backend.ErrNotSupported, h.node, rep.Error)
		}
	}
	return nil
}

// nodeProfile is one host pod's sampling during a client run.
type nodeProfile struct {
	host   profHost
	stdin  *io.PipeWriter
	ready  *lineWatcher
	done   chan struct{}
	stdout bytes.Buffer
	stderr bytes.Buffer
	err    error
}

// RunProfiled implements backend.CPUProfiler: Run, with the client's and
// the server's nodes sampled from their host pods (`agent profile`,
// started before the client, stopped by closing its stdin when the client
// returns, within the client's deadline plus margins). Each node's profile
// is cropped to the client's measured windows (its result's repeats),
// given the root frame node:<name>, and the merge is written to file. A
// sampler that fails is a warning in the log: the client's measurement
// stands and file is not written.
func (d *Deployment) RunProfiled(ctx context.Context, pl backend.Place, args []string, file string, hz int) ([]byte, []byte, error) {
	if file == "" {
		return nil, nil, errors.New("kubernetes: no profile file")
	}
	p, ok := pl.(place)
	if !ok || len(args) == 0 || args[0] != "run" {
		d.log.Warn("cpu profile: only a single client's run is profiled on a cluster; running it unprofiled", "place", pl)
		return d.Run(ctx, pl, args)
	}
	limit := clientDeadline(args[1:])
	var nps []*nodeProfile
	for _, h := range d.profHosts() {
		nps = append(nps, d.startNodeProfile(ctx, h, hz, limit))
	}
	defer func() {
		for _, np := range nps {
			np.stdin.Close()
		}
	}()
	// Wait until every sampler runs (or failed).
	t := time.NewTimer(profileReady)
	defer t.Stop()
	var running []*nodeProfile
	for _, np := range nps {
		select {
		case <-np.ready.seen:
			running = append(running, np)
		case <-np.done:
			d.log.Warn("cpu profile: the node's sampler did not start", "node", np.host.node, "err", np.failure())
		case <-t.C:
			d.log.Warn("cpu profile: the node's sampler did not start in time", "node", np.host.node, "within", profileReady)
		case <-ctx.Done():
		}
	}
	stdout, stderr, err := d.runAt(ctx, p, args)
	for _, np := range nps {
		np.stdin.Close()
	}
	var spans []profile.Span
	var res result.Result
	if json.Unmarshal(stdout, &res) == nil {
		for _, r := range res.Repeats {
			if !r.Start.IsZero() && r.DurationSec > 0 {
				spans = append(spans, profile.Span{From: r.Start, To: r.Start.Add(time.Duration(r.DurationSec * float64(time.Second)))})
			}
		}
	}
	var parts []*profile.Profile
	for _, np := range running {
		<-np.done
		if len(spans) == 0 {
			continue
		}
		pr, perr := np.profile(spans)
		if perr != nil {
			d.log.Warn("cpu profile: the node's profile is missing", "node", np.host.node, "err", perr)
			continue
		}
		parts = append(parts, pr)
	}
	if len(parts) > 0 {
		if werr := writeProfile(file, parts); werr != nil {
			d.log.Warn("cpu profile: not written", "file", file, "err", werr)
		}
	}
	return stdout, stderr, err
}

// startNodeProfile starts `agent profile` in a host pod; its exec ends
// when its stdin is closed (or its bounds pass).
func (d *Deployment) startNodeProfile(ctx context.Context, h profHost, hz int, limit time.Duration) *nodeProfile {
	pr, pw := io.Pipe()
	np := &nodeProfile{host: h, stdin: pw, ready: &lineWatcher{prefix: "ready", seen: make(chan struct{})}, done: make(chan struct{})}
	cmd := []string{"/cnibench", "k8s", "agent", "profile", "--hz", strconv.Itoa(hz),
		"--duration", (limit + profileMargin).String(), "--stop-on-stdin-eof"}
	// The exec has its own deadline: the run's end closes the stdin, the
	// profile still comes back.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(d.kctx(ctx)), limit+2*profileMargin)
	go func() {
		defer close(np.done)
		defer cancel()
		defer pr.Close()
		np.err = d.b.exec.Exec(ectx, d.ns, d.name(h.short), kube.ContainerName, cmd, pr, &np.stdout, io.MultiWriter(&np.stderr, np.ready))
	}()
	return np
}

// failure says why a sampler failed: its JSON's error, else the exec's.
func (np *nodeProfile) failure() error {
	var rep agent.Profile
	if json.Unmarshal(np.stdout.Bytes(), &rep) == nil && rep.Error != "" {
		return errors.New(firstLine(rep.Error))
	}
	if np.err != nil {
		return fmt.Errorf("%s (%s)", firstLine(np.err.Error()), firstLine(np.stderr.String()))
	}
	return errors.New("no output")
}

// profile decodes the node's profile, crops it to spans and roots it at
// node:<name>.
func (np *nodeProfile) profile(spans []profile.Span) (*profile.Profile, error) {
	if np.err != nil {
		return nil, np.failure()
	}
	var rep agent.Profile
	if err := json.Unmarshal(np.stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("decode the sampler's output: %w", err)
	}
	p, err := rep.Decode()
	if err != nil {
		return nil, err
	}
	c, err := profile.CropSpans(p, spans...)
	if err != nil {
		return nil, err
	}
	if err := profile.AddNodeRoot(c, np.host.node); err != nil {
		return nil, err
	}
	return c, nil
}

// writeProfile merges the nodes' profiles into file (written whole or not
// at all). The merge's window and windows are the client's, not their sum
// over nodes; its CPUs are the nodes' together.
func writeProfile(file string, parts []*profile.Profile) error {
	m, err := profile.Merge(parts...)
	if err != nil {
		return err
	}
	m.Window, m.Windows = parts[0].Window, parts[0].Windows
	m.CPUs = 0
	for _, p := range parts {
		m.CPUs += p.CPUs // every node's CPUs were sampled
	}
	m.P.DurationNanos = int64(m.Window)
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := m.Write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, file)
}

var _ backend.CPUProfiler = (*Deployment)(nil)
