package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// runClient runs `cnibench ARGS` (a client: run …) in ns on the clients'
// CPUs, in the spawner's cgroup, and returns its stdout and stderr. On
// ctx's end the client is interrupted, so that it reports what it
// measured.
func (st *state) runClientOutput(ctx context.Context, ns *lab.NS, args []string) (stdout, stderr bytes.Buffer, err error) {
	cmd := exec.Command(st.o.Binary, args...)
	// Own process group: the terminal's Ctrl-C reaches only the suite, which
	// then interrupts the client so that it reports what it measured.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = st.childEnv()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err = st.spawner.Start(ns, cmd, st.clientCPUs); err != nil {
		return stdout, stderr, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			err = <-done
		}
	}
	return stdout, stderr, err
}

// runClient runs a client for a scenario (scenario.Env.Run) and parses
// its JSON result.
func (st *state) runClient(ctx context.Context, ns *lab.NS, args ...string) (*result.Result, error) {
	stdout, stderr, err := st.runClientOutput(ctx, ns, args)
	var res result.Result
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil || res.Schema != result.SchemaResult {
		msg := firstLine(strings.TrimSpace(stderr.String()))
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return nil, fmt.Errorf("client failed: %s", msg)
	}
	return &res, nil
}

// clientRun is where and how one cell's client runs.
type clientRun struct {
	// run runs `cnibench ARGS` at the cell's client place.
	run func(ctx context.Context, args []string) (stdout, stderr []byte, err error)
	// target are the client's target flags (--target ADDR, …).
	target []string
	// evidence starts the path counters of one client run; nil: none.
	evidence func() backend.Evidence
	// check applies the evidence's path check (off when a scenario's
	// Checker proves its own path).
	check bool
	// config is added to the run's configuration (expected MTU, wire, …).
	config map[string]string
}

// labClient is a clientRun of a lab namespace (scenarios).
func (st *state) labClient(ns *lab.NS) func(ctx context.Context, args []string) ([]byte, []byte, error) {
	return func(ctx context.Context, args []string) ([]byte, []byte, error) {
		stdout, stderr, err := st.runClientOutput(ctx, ns, args)
		return stdout.Bytes(), stderr.Bytes(), err
	}
}

// measureScenario runs one repeat of a scenario's cell on its lab: the
// scenario may name the client and target (Targeter) and prove the path
// itself (Checker).
func (st *state) measureScenario(ctx context.Context, c cell, rep int, sl *scenarioLab) {
	cr := clientRun{config: topoConfig(sl.topo)}
	if sl.srv != nil {
		cr.run, cr.target = st.labClient(sl.ep.Client), []string{"--target", sl.srv.addr}
	}
	if tg, ok := c.sc.prep.(scenario.Targeter); ok {
		t, err := tg.Target(c.sc.cell)
		if err != nil {
			st.record(c, rep, nil, "no client target: "+err.Error(), 0)
			return
		}
		cr.run, cr.target = nil, t.Args
		if t.Client != nil {
			cr.run = st.labClient(t.Client)
		}
	}
	_, checker := c.sc.prep.(scenario.Checker)
	// Path evidence (lab counters) around the client's whole run; a
	// scenario on its own topology (no lab paths) proves its own. A
	// scenario with a Checker proved its own path (e.g. a socket-LB
	// hairpin never leaves the pod, so the lab's claims about node
	// forwarding do not apply).
	if len(sl.topo.Paths) > 0 || !checker {
		cr.evidence = func() backend.Evidence { return newLabEvidence(sl.name, sl.dp, sl.topo) }
	}
	cr.check = !checker
	st.measure(ctx, c, rep, cr)
}

// topoConfig is a lab topology's part of a run's configuration.
func topoConfig(topo *lab.Topology) map[string]string {
	return map[string]string{
		"expected_path_mtu": strconv.Itoa(topo.PathMTU),
		"pod_mtu":           strconv.Itoa(topo.PodMTU),
		"wire":              topo.Wire,
	}
}

// measure runs one repeat of a cell's client and records it.
func (st *state) measure(ctx context.Context, c cell, rep int, cr clientRun) {
	var check func() (map[string]float64, error)
	if c.sc != nil {
		if ck, ok := c.sc.prep.(scenario.Checker); ok {
			end, err := ck.BeginCell(c.sc.cell)
			if err != nil {
				st.record(c, rep, nil, "proof failed: "+err.Error(), 0)
				return
			}
			check = end
		}
	}
	if cr.run == nil {
		st.record(c, rep, nil, "no client target: the scenario gave none", 0)
		return
	}
	args := append(append([]string{"run"}, cr.target...), "--test", c.Test,
		"--flows", strconv.Itoa(c.Flows), "--duration", st.o.Duration.String(),
		"--warmup", st.o.Warmup.String(), "--repeat", "1", "--format", "json", "-q")
	if c.sc != nil && c.sc.rate != "" {
		args = append(args, "--rate", c.sc.rate)
	}

	var ev backend.Evidence
	if cr.evidence != nil {
		ev = cr.evidence()
	}
	t0 := time.Now()
	stdout, stderr, err := cr.run(ctx, args)
	el := time.Since(t0)
	var evidence map[string]float64
	var evWarnings []string
	if ev != nil {
		evidence, evWarnings = ev.End()
	}
	var proof map[string]float64
	var proofErr error
	if check != nil {
		proof, proofErr = check()
	}
	var res result.Result
	if jerr := json.Unmarshal(stdout, &res); jerr != nil || res.Schema != result.SchemaResult {
		msg := strings.TrimSpace(string(stderr))
		if msg == "" && err != nil {
			msg = err.Error()
		}
		if ctx.Err() != nil {
			return
		}
		st.record(c, rep, nil, fmt.Sprintf("client failed: %s", firstLine(msg)), el)
		return
	}
	if proofErr != nil {
		if ctx.Err() != nil {
			return
		}
		st.record(c, rep, nil, "proof failed: "+firstLine(proofErr.Error()), el)
		return
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics == nil && len(proof) > 0 {
		// A failed repeat keeps the proof's counters: they explain it
		// (summaries skip failed repeats).
		res.Repeats[0].Metrics = map[string]float64{}
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics != nil {
		m := res.Repeats[0].Metrics
		maps.Copy(m, evidence)
		maps.Copy(m, proof)
		res.Warnings = append(res.Warnings, evWarnings...)
		if ev != nil && cr.check {
			res.Warnings = append(res.Warnings, ev.Check(c.Path, m)...)
		}
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics != nil && c.timeWait >= 0 {
		res.Repeats[0].Metrics[TimeWaitAtStart] = float64(c.timeWait)
	}
	if res.Config == nil {
		res.Config = map[string]string{}
	}
	maps.Copy(res.Config, cr.config)
	c.sc.apply(c, &res)
	st.record(c, rep, &res, "", el)
}

// labEvidence is the lab's path counters (backend.Evidence).
type labEvidence struct {
	datapath string
	ev       *lab.Evidence
}

func newLabEvidence(datapath string, dp lab.Datapath, topo *lab.Topology) *labEvidence {
	return &labEvidence{datapath: datapath, ev: lab.BeginEvidence(dp, topo)}
}

func (e *labEvidence) End() (map[string]float64, []string) { return e.ev.End() }

func (e *labEvidence) Check(path string, m map[string]float64) []string {
	return lab.CheckPath(e.datapath, lab.PathKind(path), m)
}
