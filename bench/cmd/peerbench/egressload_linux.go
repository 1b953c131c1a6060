package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
)

// egressChildCmd is the hidden subcommand that runs one cnibench load in
// its own process, so its peak RSS (VmHWM) is the loader's alone.
const egressChildCmd = "egress-load-child"

// egressChildMain is `peerbench egress-load-child -mech M -ns NAME`: it
// generates the set, loads it into the named namespace with mechanism M,
// prints a childResult as JSON and exits without removing the filter (the
// parent deletes the namespace, for both sides alike).
func egressChildMain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(egressChildCmd, flag.ContinueOnError)
	mech := fs.String("mech", "", "egress mechanism")
	nsName := fs.String("ns", "", "named network namespace to load into")
	n := fs.Int("n", egressN, "deny CIDRs")
	seed := fs.Uint64("seed", egressSeed, "Generate seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := filter.Lookup(*mech)
	if err != nil {
		return err
	}
	if err := m.Probe(); err != nil {
		return fmt.Errorf("mechanism %s: %w", *mech, err)
	}
	ns, err := netns.GetFromName(*nsName)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", *nsName, err)
	}
	defer ns.Close()
	cidrs, err := filter.Generate(*seed, *n, netip.MustParseAddr(egressMust))
	if err != nil {
		return err
	}
	runtime.GC()
	before, err := procStatusBytes("self", "VmRSS")
	if err != nil {
		return err
	}
	t := filter.Target{NSPath: filepath.Join(nsrun.RunDir, *nsName), NSFd: int(ns), Dev: egressDev,
		Do: func(f func() error) error { return nsrun.Do(ns, f) }}
	ctx := context.Background()
	start := time.Now()
	_, info, err := m.Load(ctx, t, cidrs, filter.Options{})
	sec := time.Since(start).Seconds()
	if err != nil {
		return err
	}
	hwm, err := procStatusBytes("self", "VmHWM")
	if err != nil {
		return err
	}
	runtime.KeepAlive(cidrs)
	return json.NewEncoder(stdout).Encode(childResult{Sec: sec, VmHWM: hwm, RSSBefore: before,
		ExternalPeakRSS: info.LoaderPeakRSS, Method: info.Method})
}

// egressNS is one trial's fresh namespace with the veth n0 (its peer c0
// stays in the same namespace: nothing touches the host's).
type egressNS struct {
	name string
	h    netns.NsHandle
}

func newEgressNS(seq int) (*egressNS, error) {
	name := fmt.Sprintf("cnb-bench-eg-%d-%d", os.Getpid(), seq)
	h, err := nsrun.NewNamed(name)
	if err != nil {
		return nil, fmt.Errorf("create netns %s: %w", name, err)
	}
	e := &egressNS{name: name, h: h}
	hl, err := netlink.NewHandleAt(h)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("netlink in %s: %w", name, err), e.close())
	}
	defer hl.Close()
	if err := hl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: egressDev}, PeerName: "c0"}); err != nil {
		return nil, errors.Join(fmt.Errorf("veth %s in %s: %w", egressDev, name, err), e.close())
	}
	for _, dev := range []string{egressDev, "c0"} {
		l, err := hl.LinkByName(dev)
		if err == nil {
			err = hl.LinkSetUp(l)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("up %s in %s: %w", dev, name, err), e.close())
		}
	}
	return e, nil
}

func (e *egressNS) close() error {
	e.h.Close()
	if err := netns.DeleteNamed(e.name); err != nil {
		return fmt.Errorf("delete netns %s: %w", e.name, err)
	}
	return nil
}

// egressFiles are the peers' input files, written once per run.
type egressFiles struct{ nft, ipset string }

func writeEgressFiles(dir string) (egressFiles, error) {
	cidrs, err := filter.Generate(egressSeed, egressN, netip.MustParseAddr(egressMust))
	if err != nil {
		return egressFiles{}, err
	}
	f := egressFiles{nft: filepath.Join(dir, "deny.nft"), ipset: filepath.Join(dir, "deny.ipset")}
	var nb, ib bytes.Buffer
	if err := writeNftScript(&nb, egressDev, cidrs, 4096); err != nil {
		return f, err
	}
	// The same name and sizes as the ipset mechanism (ipset_linux.go:
	// hashsize ceilPow2(n/4), maxelem n+1024).
	hashsize, maxelem := 1, egressN+1024
	for hashsize < max(egressN/4, 1024) {
		hashsize <<= 1
	}
	if err := writeIPSetRestore(&ib, "cnb-egress", hashsize, maxelem, cidrs); err != nil {
		return f, err
	}
	return f, errors.Join(os.WriteFile(f.nft, nb.Bytes(), 0o644), os.WriteFile(f.ipset, ib.Bytes(), 0o644))
}

// egressCnibenchTrial runs the helper process in ns and reads its result.
func egressCnibenchTrial(ctx context.Context, self string, mech string, ns *egressNS) (childResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, egressChildCmd, "-mech", mech, "-ns", ns.name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return childResult{}, fmt.Errorf("%s %s: %w: %s", egressChildCmd, mech, err, tailString(strings.TrimSpace(errb.String()), 400))
	}
	return parseChildResult(out.Bytes())
}

// egressPeerTrial runs argv (under GNU time for its maximum RSS) from a
// thread inside ns, stdin from a file if given; it returns the wall time
// from start to exit and the maximum RSS.
func egressPeerTrial(ctx context.Context, timeBin string, ns *egressNS, stdin string, argv []string) (float64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	tf, err := os.CreateTemp("", "cnb-bench-time-")
	if err != nil {
		return 0, 0, err
	}
	tf.Close()
	defer os.Remove(tf.Name())
	cmd := exec.CommandContext(ctx, timeBin, append([]string{"-f", "%M", "-o", tf.Name()}, argv...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if stdin != "" {
		in, err := os.Open(stdin)
		if err != nil {
			return 0, 0, err
		}
		defer in.Close()
		cmd.Stdin = in
	}
	start := time.Now()
	if err := nsrun.Do(ns.h, cmd.Start); err != nil {
		return 0, 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	err = cmd.Wait()
	sec := time.Since(start).Seconds()
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, tailString(strings.TrimSpace(errb.String()), 400))
	}
	b, err := os.ReadFile(tf.Name())
	if err != nil {
		return 0, 0, err
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return sec, 0, fmt.Errorf("GNU time output %q: %w", b, err)
	}
	return sec, kb << 10, nil
}

// runEgressLoad runs the egress-load comparisons and writes the report.
func runEgressLoad(ctx context.Context, o options, root string, stdout io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	timeBin, err := exec.LookPath("time")
	if err != nil {
		timeBin = "/usr/bin/time"
	}
	tmp, err := os.MkdirTemp("", "cnb-bench-egress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	logf("egress-load: writing the peers' files for %d CIDRs", egressN)
	files, err := writeEgressFiles(tmp)
	if err != nil {
		return err
	}
	rep := &EgressReport{
		Schema: "cnibench/peerbench-egress/v1", Plan: egressPlanHeader(o.rounds), Start: time.Now().UTC(),
		Command: "go run ./bench/cmd/peerbench " + strings.Join(os.Args[1:], " "),
		Host:    hostInfo(), Tools: map[string]string{},
		Config: map[string]string{"rounds": strconv.Itoa(o.rounds), "n": strconv.Itoa(egressN), "seed": strconv.Itoa(egressSeed),
			"must": egressMust, "pause": o.pause.String(), "plan_followed": fmt.Sprint(o.rounds == planRounds)},
	}
	for _, v := range [][]string{{"nft", "--version"}, {"ipset", "--version"}} {
		if out, err := exec.CommandContext(ctx, v[0], v[1:]...).Output(); err == nil {
			rep.Tools[v[0]] = strings.TrimSpace(string(out))
		}
	}
	var errs []error
	seq := 0
	for _, row := range egressRows() {
		sides := []string{"cnibench"}
		if row.Peer != "" {
			sides = append(sides, row.Peer)
		}
		logf("egress-load: %s, %d rounds", row.Name, o.rounds)
		for round := 1; round <= o.rounds && ctx.Err() == nil; round++ {
			order := sides
			if round%2 == 0 && len(sides) == 2 {
				order = []string{sides[1], sides[0]}
			}
			for i, side := range order {
				if ctx.Err() != nil {
					break
				}
				seq++
				tr := egressTrial(ctx, self, timeBin, files, row, side, seq)
				tr.Round, tr.Order = round, i+1
				if tr.Error != "" {
					logf("  round %d %-8s FAILED: %s", round, side, tr.Error)
					errs = append(errs, fmt.Errorf("%s round %d %s: %s", row.Name, round, side, tr.Error))
				} else {
					logf("  round %d %-8s %.3f s, max RSS %s", round, side, *tr.Sec, mib(float64(tr.VmHWM)))
				}
				row.Trials = append(row.Trials, tr)
				select {
				case <-ctx.Done():
				case <-time.After(o.pause):
				}
			}
		}
		row.finish(o.rounds, o.rounds == planRounds)
		rep.Rows = append(rep.Rows, row)
	}
	for _, e := range errs {
		rep.Errors = append(rep.Errors, e.Error())
	}
	rep.End = time.Now().UTC()
	rep.Interrupted = ctx.Err() != nil
	var md strings.Builder
	rep.writeMarkdown(&md)
	if _, err := io.WriteString(stdout, md.String()); err != nil {
		errs = append(errs, err)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	if o.mdOut != "" {
		if err := os.WriteFile(abs(o.mdOut), []byte(md.String()), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	if err := writeJSON(abs(o.jsonOut), rep); err != nil {
		errs = append(errs, err)
	} else {
		logf("wrote %s", abs(o.jsonOut))
	}
	if rep.Interrupted {
		errs = append(errs, errors.New("interrupted"))
	}
	return errors.Join(errs...)
}

// egressTrial runs one side's load in a fresh namespace and deletes it.
func egressTrial(ctx context.Context, self, timeBin string, files egressFiles, row *EgressRow, side string, seq int) (tr EgressTrial) {
	tr.Side = side
	ns, err := newEgressNS(seq)
	if err != nil {
		tr.Error = err.Error()
		return tr
	}
	defer func() {
		if err := ns.close(); err != nil && tr.Error == "" {
			tr.Error = err.Error()
		}
	}()
	var sec float64
	switch side {
	case "cnibench":
		var r childResult
		r, err = egressCnibenchTrial(ctx, self, row.Mechanism, ns)
		sec, tr.VmHWM, tr.RSSBefore, tr.ExternalPeakRSS, tr.Method = r.Sec, r.VmHWM, r.RSSBefore, r.ExternalPeakRSS, r.Method
	case "nft":
		sec, tr.VmHWM, err = egressPeerTrial(ctx, timeBin, ns, "", []string{"nft", "-f", files.nft})
	case "ipset":
		sec, tr.VmHWM, err = egressPeerTrial(ctx, timeBin, ns, files.ipset, []string{"ipset", "restore"})
	default:
		err = fmt.Errorf("unknown side %q", side)
	}
	if err != nil {
		tr.Error = err.Error()
		return tr
	}
	tr.Sec = &sec
	return tr
}
