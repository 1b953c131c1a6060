package incluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

// SchemaPodFilter is the schema of the lines `cnibench k8s agent
// egress-filter` prints.
const SchemaPodFilter = "cnibench/agent/egress-filter/v1"

// Phases of a pod filter's report lines.
const (
	PhaseLoaded  = "loaded"  // the filter is loaded and proven: run the cells now
	PhaseRemoved = "removed" // the filter is removed and the release proven
)

// PodOptions configure a raw mechanism loaded inside a pod, on the pod's
// own egress (a cluster's raw point).
type PodOptions struct {
	Mechanism string
	Rules     int
	Seed      uint64
	Traversal string
	// Denied is the server whose address the deny set covers (a /32 of it,
	// with Rules−1 generated CIDRs: DenySet), Allowed one that must
	// keep answering.
	Denied, Allowed netip.AddrPort
	// Dev is the pod's interface ("": the default route's).
	Dev string
	// Wait bounds each proof.
	Wait time.Duration
}

// PodReport is one line of a pod filter's output.
type PodReport struct {
	Schema    string `json:"schema"`
	Phase     string `json:"phase"`
	Mechanism string `json:"mechanism"`
	Dev       string `json:"dev"`
	Rules     int    `json:"rules"`
	// Watch is the phase's proof: enforcement (loaded) or release
	// (removed).
	Watch agent.Watch `json:"watch"`
	// ReturnedSeconds is how long Load (or Close) took to return.
	ReturnedSeconds  float64         `json:"returned_seconds"`
	Info             filter.LoadInfo `json:"info"`
	Dropped          uint64          `json:"dropped"`
	KernelBytes      int64           `json:"kernel_bytes"`
	KernelBytesKnown bool            `json:"kernel_bytes_known"`
	// Error says why the phase failed ("" if it did not).
	Error string `json:"error,omitempty"`
}

// podWatch runs an in-process watch of o.Denied and calls change once it
// is ready, returning the watch.
func podWatch(ctx context.Context, o PodOptions, want string, change func() error) (agent.Watch, error) {
	goR, goW := io.Pipe()
	readyR, readyW := io.Pipe()
	wo := proofWatch(o.Denied.String(), o.Allowed.String(), want, o.Wait)
	done := make(chan agent.Watch, 1)
	go func() {
		done <- agent.RunWatch(ctx, wo, goR, readyW)
		readyW.Close()
	}()
	line, _ := bufio.NewReader(readyR).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, readyR) }()
	var cerr error
	if line == "ready\n" {
		_, _ = goW.Write([]byte("go\n"))
		cerr = change()
	}
	goW.Close()
	w := <-done
	if cerr != nil {
		return w, cerr
	}
	if w.Error != "" {
		return w, errors.New("the watch could not measure: " + w.Error)
	}
	return w, nil
}

// defaultRouteDev is the interface of the IPv4 default route
// (/proc/net/route).
func defaultRouteDev() (string, error) {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return "", fmt.Errorf("find the default route's interface: %w", err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if i > 0 && len(f) > 2 && f[1] == "00000000" {
			return f[0], nil
		}
	}
	return "", errors.New("find the default route's interface: no IPv4 default route; pass --dev")
}

// RunInPod loads a raw mechanism on the pod's own egress and proves it
// (its first report line, phase loaded), holds it until a line or the end
// of stdin (or ctx's end), then removes it and proves the release (the
// second line, phase removed). A failure is a line with its error, and
// the error.
func RunInPod(ctx context.Context, o PodOptions, stdin io.Reader, stdout io.Writer) error {
	r := PodReport{Schema: SchemaPodFilter, Phase: PhaseLoaded, Mechanism: o.Mechanism, Rules: o.Rules}
	emit := func(r PodReport, err error) error {
		if err != nil {
			r.Error = err.Error()
		}
		b, merr := json.Marshal(r)
		if merr != nil {
			return merr
		}
		if _, werr := fmt.Fprintf(stdout, "%s\n", b); werr != nil {
			return werr
		}
		return err
	}
	m, err := filter.Lookup(o.Mechanism)
	if err != nil {
		return emit(r, err)
	}
	probe := m.Probe
	if lp, ok := m.(filter.LocalProber); ok {
		probe = lp.ProbeLocal
	}
	if err := probe(); err != nil {
		return emit(r, fmt.Errorf("%s cannot run in this pod: %w", o.Mechanism, err))
	}
	if o.Dev == "" {
		if o.Dev, err = defaultRouteDev(); err != nil {
			return emit(r, err)
		}
	}
	r.Dev = o.Dev
	cidrs, err := DenySet(o.Seed, o.Rules, o.Denied.Addr(), o.Allowed.Addr())
	if err != nil {
		return emit(r, err)
	}
	t, closeNS, err := ownTarget(o.Dev)
	if err != nil {
		return emit(r, err)
	}
	defer closeNS()
	var f filter.Filter
	w, err := podWatch(ctx, o, agent.WantRefused, func() error {
		t0 := time.Now()
		var lerr error
		f, r.Info, lerr = m.Load(ctx, t, cidrs, filter.Options{EstablishedBypass: o.Traversal == filter.TraversalNewConnection})
		r.ReturnedSeconds = time.Since(t0).Seconds()
		return lerr
	})
	r.Watch = w
	closeFilter := func() {
		if f != nil {
			_ = f.Close(context.WithoutCancel(ctx))
		}
	}
	switch {
	case err != nil:
		closeFilter()
		return emit(r, fmt.Errorf("load %s with %d rules on %s: %w", o.Mechanism, o.Rules, o.Dev, err))
	case !w.Changed:
		closeFilter()
		return emit(r, fmt.Errorf("%s with %d rules on %s: %s answered %d of %d probes, not refused for good within %s",
			o.Mechanism, o.Rules, o.Dev, w.Target, w.Answered, w.Probes, o.Wait))
	case w.AllowedProbes > 0 && w.AllowedAnswered < w.AllowedProbes:
		closeFilter()
		return emit(r, fmt.Errorf("%s with %d rules also cut the allowed server %s: %d of %d probes answered",
			o.Mechanism, o.Rules, w.Allowed, w.AllowedAnswered, w.AllowedProbes))
	}
	st, err := f.Stats(ctx)
	if err != nil {
		closeFilter()
		return emit(r, fmt.Errorf("read %s counters: %w", o.Mechanism, err))
	}
	if st.Dropped == 0 {
		closeFilter()
		return emit(r, fmt.Errorf("%s: probes to %s stopped answering but the filter's drop counter is 0", o.Mechanism, o.Denied))
	}
	r.Dropped, r.KernelBytes, r.KernelBytesKnown = st.Dropped, st.KernelBytes, st.KernelBytesKnown
	if err := emit(r, nil); err != nil {
		closeFilter()
		return err
	}
	// Hold the filter while the cells run.
	held := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(stdin).ReadString('\n')
		close(held)
	}()
	select {
	case <-held:
	case <-ctx.Done():
	}
	rr := PodReport{Schema: SchemaPodFilter, Phase: PhaseRemoved, Mechanism: o.Mechanism, Rules: o.Rules, Dev: o.Dev}
	w, err = podWatch(context.WithoutCancel(ctx), o, agent.WantAnswers, func() error {
		t0 := time.Now()
		cerr := f.Close(context.WithoutCancel(ctx))
		rr.ReturnedSeconds = time.Since(t0).Seconds()
		return cerr
	})
	rr.Watch = w
	if err == nil && !w.Changed {
		err = fmt.Errorf("%s removed, but %s did not answer again within %s", o.Mechanism, w.Target, o.Wait)
	}
	return emit(rr, err)
}
