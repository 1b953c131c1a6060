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

// measure runs one repeat of a cell in the client pod and records it.
func (st *state) measure(ctx context.Context, c cell, rep int, ep lab.Endpoint, topo *lab.Topology, dp lab.Datapath, srv *server) {
	var client *lab.NS
	var target []string
	if srv != nil {
		client, target = ep.Client, []string{"--target", srv.addr}
	}
	var check func() (map[string]float64, error)
	if c.sc != nil {
		if tg, ok := c.sc.prep.(scenario.Targeter); ok {
			t, err := tg.Target(c.sc.cell)
			if err != nil {
				st.record(c, rep, nil, "no client target: "+err.Error(), 0)
				return
			}
			client, target = t.Client, t.Args
		}
		if ck, ok := c.sc.prep.(scenario.Checker); ok {
			end, err := ck.BeginCell(c.sc.cell)
			if err != nil {
				st.record(c, rep, nil, "proof failed: "+err.Error(), 0)
				return
			}
			check = end
		}
	}
	if client == nil {
		st.record(c, rep, nil, "no client target: the scenario gave none", 0)
		return
	}
	args := append(append([]string{"run"}, target...), "--test", c.Test,
		"--flows", strconv.Itoa(c.Flows), "--duration", st.o.Duration.String(),
		"--warmup", st.o.Warmup.String(), "--repeat", "1", "--format", "json", "-q")
	if c.sc != nil && c.sc.rate != "" {
		args = append(args, "--rate", c.sc.rate)
	}

	// Path evidence (lab counters) around the client's whole run; a
	// scenario on its own topology (no lab paths) proves its own.
	var ev *lab.Evidence
	if len(topo.Paths) > 0 || check == nil {
		ev = lab.BeginEvidence(dp, topo)
	}
	t0 := time.Now()
	stdout, stderr, err := st.runClientOutput(ctx, client, args)
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
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil || res.Schema != result.SchemaResult {
		msg := strings.TrimSpace(stderr.String())
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
		if check == nil {
			// A scenario with a Checker proved its own path (e.g. a
			// socket-LB hairpin never leaves the pod, so the lab's claims
			// about node forwarding do not apply).
			res.Warnings = append(res.Warnings, lab.CheckPath(c.Datapath, lab.PathKind(c.Path), m)...)
		}
	}
	if len(res.Repeats) > 0 && res.Repeats[0].Metrics != nil && c.timeWait >= 0 {
		res.Repeats[0].Metrics[TimeWaitAtStart] = float64(c.timeWait)
	}
	if res.Config == nil {
		res.Config = map[string]string{}
	}
	res.Config["expected_path_mtu"] = strconv.Itoa(topo.PathMTU)
	res.Config["pod_mtu"] = strconv.Itoa(topo.PodMTU)
	res.Config["wire"] = topo.Wire
	c.sc.apply(c, &res)
	st.record(c, rep, &res, "", el)
}
