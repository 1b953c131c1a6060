package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/procfs"
)

// LockPath serialises building and removing labs on this machine.
var LockPath = filepath.Join(RunDir, "lab.lock")

// lockWait bounds how long an operation waits for another one's lock.
const lockWait = 2 * time.Minute

// ProcessOwned is implemented by datapaths whose state lives in the process
// that built them (BPF links closed when it exits): a detached lab skips
// them.
type ProcessOwned interface {
	OwnedByProcess() bool
}

// Up builds the datapaths of opts. A datapath whose Probe reports
// ErrNotSupported is skipped (see Skipped); any other failure, or ctx being
// cancelled, tears down everything Up created and returns the error.
func (l *Lab) Up(ctx context.Context, opts Options) (err error) {
	opts, err = ValidateOptions(opts)
	if err != nil {
		return err
	}
	if opts.RunID == "" {
		if opts.RunID, err = NewRunID(); err != nil {
			return err
		}
	}
	l.mu.Lock()
	if l.runID != "" {
		l.mu.Unlock()
		return fmt.Errorf("lab %s is already up", l.runID)
	}
	l.runID, l.opts = opts.RunID, opts
	l.skipped = map[string]error{}
	l.mu.Unlock()

	unlock, err := acquireLock(ctx)
	if err != nil {
		l.reset()
		return err
	}
	defer unlock()

	existing, err := listNS()
	if err != nil {
		l.reset()
		return err
	}
	for _, name := range existing {
		if p, _ := ParseNSName(name); p.RunID == opts.RunID {
			l.reset()
			return fmt.Errorf("run id %s is in use: netns %s exists", opts.RunID, name)
		}
	}

	if _, err := os.Stat(StatePath(opts.RunID)); err == nil {
		l.reset()
		return fmt.Errorf("run id %s is in use: %s exists", opts.RunID, StatePath(opts.RunID))
	}

	pid := os.Getpid()
	start, _ := processStart(pid)
	st := &State{
		Schema: StateSchema, RunID: opts.RunID, PID: pid, PIDStart: start,
		Detached: opts.Detached, Created: time.Now().UTC().Truncate(time.Second), WireMTU: opts.MTU,
		Wire: opts.Wire,
	}
	l.mu.Lock()
	l.state = st
	l.mu.Unlock()
	defer func() {
		if err != nil {
			if terr := l.teardown(context.WithoutCancel(ctx)); terr != nil {
				err = errors.Join(err, fmt.Errorf("tear down after failed lab up: %w", terr))
			}
		}
	}()
	if err := writeState(st); err != nil {
		return err
	}
	l.logger.Info("lab up", "run_id", opts.RunID, "datapaths", opts.Datapaths, "mtu", opts.MTU, "wire", opts.Wire)

	for _, name := range opts.Datapaths {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lab up interrupted before datapath %s: %w", name, err)
		}
		dp, err := NewDatapath(name)
		if err != nil {
			return err
		}
		if perr := probe(dp, opts.Detached); perr != nil {
			if !errors.Is(perr, ErrNotSupported) {
				return fmt.Errorf("probe datapath %s: %w", name, perr)
			}
			l.logger.Info("datapath skipped", "datapath", name, "reason", perr) // the callers print skips (once)
			l.mu.Lock()
			l.skipped[name] = perr
			st.Datapaths = append(st.Datapaths, DatapathState{Name: name, Skipped: perr.Error()})
			l.mu.Unlock()
			if err := writeState(st); err != nil {
				return err
			}
			continue
		}
		env := &Env{Logger: l.logger.With("datapath", name), RunID: opts.RunID, Datapath: name, WireMTU: opts.MTU, Wire: opts.Wire, ExtraPods: opts.ExtraPods}
		d := &deployment{dp: dp, env: env}
		l.mu.Lock()
		l.deployed = append(l.deployed, d)
		l.mu.Unlock()
		began := time.Now()
		topo, err := dp.Setup(ctx, env)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil && errors.Is(err, ErrNotSupported) && ctx.Err() == nil {
			// The datapath found out during setup that it cannot run here
			// (e.g. BPF loading refused): remove what it built, skip it.
			l.logger.Info("datapath skipped", "datapath", name, "reason", err) // the callers print skips (once)
			l.mu.Lock()
			l.deployed = l.deployed[:len(l.deployed)-1]
			l.skipped[name] = err
			st.Datapaths = append(st.Datapaths, DatapathState{Name: name, Skipped: err.Error()})
			l.mu.Unlock()
			if terr := teardownDeployment(ctx, d); terr != nil {
				return fmt.Errorf("tear down skipped datapath %s: %w", name, terr)
			}
			if err := writeState(st); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("set up datapath %s: %w", name, err)
		}
		env.Logger.Debug("datapath up", "took", time.Since(began))
		topo.Wire = opts.Wire
		l.mu.Lock()
		d.topo = topo
		st.Datapaths = append(st.Datapaths, datapathState(name, env, topo))
		l.mu.Unlock()
		if err := writeState(st); err != nil {
			return err
		}
	}
	return nil
}

func probe(dp Datapath, detached bool) error {
	if po, ok := dp.(ProcessOwned); ok && po.OwnedByProcess() && detached {
		return &UnsupportedError{
			Feature: dp.Name() + " in a detached lab",
			Reason:  "its BPF programs are held by the process that attaches them and would be detached when it exits (use lab up --hold)",
		}
	}
	return dp.Probe()
}

func datapathState(name string, env *Env, topo *Topology) DatapathState {
	ds := DatapathState{Name: name, PodMTU: topo.PodMTU, PathMTU: topo.PathMTU}
	for _, ns := range env.Namespaces() {
		ds.Namespaces = append(ds.Namespaces, ns.Name)
	}
	for _, p := range topo.Paths {
		ds.Paths = append(ds.Paths, PathState{Kind: p.Kind, Client: p.Client.Name, Server: p.Server.Name, ServerIP: p.ServerIP.String()})
	}
	return ds
}

// Down removes everything Up created: it kills the processes started with
// NS.Start (and any other process left in the lab's namespaces), tears the
// datapaths down and deletes the namespaces and the state file. It runs to
// the end even if ctx is cancelled.
func (l *Lab) Down(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if l.RunID() == "" {
		return nil
	}
	unlock, err := acquireLock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return l.teardown(ctx)
}

// teardown undoes Up; the caller holds the lock.
func (l *Lab) teardown(ctx context.Context) error {
	l.mu.Lock()
	deployed := slices.Clone(l.deployed)
	runID := l.runID
	l.mu.Unlock()
	var errs []error
	for i := len(deployed) - 1; i >= 0; i-- {
		if err := teardownDeployment(ctx, deployed[i]); err != nil {
			errs = append(errs, err)
		}
	}
	// Anything else of this run (a namespace being created when Setup
	// failed) goes too.
	if names, err := listNS(); err != nil {
		errs = append(errs, err)
	} else {
		for _, name := range names {
			if p, _ := ParseNSName(name); p.RunID == runID {
				if err := removeNS(name); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := os.Remove(StatePath(runID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove lab state: %w", err))
	}
	l.logger.Info("lab down", "run_id", runID)
	l.reset()
	return errors.Join(errs...)
}

// teardownDeployment kills what runs in a datapath's namespaces, tears the
// datapath down and deletes its namespaces.
func teardownDeployment(ctx context.Context, d *deployment) error {
	var errs []error
	nss := d.env.Namespaces()
	for _, ns := range nss {
		ns.killStarted()
	}
	if err := d.dp.Teardown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("tear down datapath %s: %w", d.dp.Name(), err))
	}
	for j := len(nss) - 1; j >= 0; j-- {
		nss[j].close()
		if err := removeNS(nss[j].Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (l *Lab) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runID = ""
	l.deployed = nil
	l.state = nil
}

// acquireLock takes an exclusive flock on LockPath, polling until ctx is
// done or lockWait has passed.
func acquireLock(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", RunDir, err)
	}
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lab lock: %w", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", LockPath, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for %s (another cnibench lab operation is running): %w", LockPath, ctx.Err())
		case <-tick.C:
		}
	}
}

func writeState(s *State) error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", RunDir, err)
	}
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	path := StatePath(s.RunID)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write lab state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write lab state: %w", err)
	}
	return nil
}

// processStart returns a process's start time in clock ticks after boot
// (field 22 of /proc/<pid>/stat).
func processStart(pid int) (uint64, error) {
	st, err := procfs.ReadStat(pid)
	return st.StartTime, err
}

// ownerAlive tells whether the process recorded in s still runs (same pid
// and same start time).
func ownerAlive(s *State) bool {
	if s == nil || s.PID <= 0 {
		return false
	}
	start, err := processStart(s.PID)
	if err != nil {
		return false
	}
	return s.PIDStart == 0 || start == s.PIDStart
}

// Status lists the lab namespaces on this machine grouped by run id, with
// their state files and whether they are leaked.
func Status() ([]RunStatus, error) {
	names, err := listNS()
	if err != nil {
		return nil, err
	}
	byRun := map[string]*RunStatus{}
	get := func(id string) *RunStatus {
		if r, ok := byRun[id]; ok {
			return r
		}
		r := &RunStatus{RunID: id}
		byRun[id] = r
		return r
	}
	for _, n := range names {
		p, ok := ParseNSName(n)
		if !ok {
			continue
		}
		r := get(p.RunID)
		r.Namespaces = append(r.Namespaces, n)
	}
	files, err := filepath.Glob(filepath.Join(RunDir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list lab state files: %w", err)
	}
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", f, err))
			continue
		}
		s, err := ParseState(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f, err))
			continue
		}
		get(s.RunID).State = s
	}
	out := make([]RunStatus, 0, len(byRun))
	for _, r := range byRun {
		sort.Strings(r.Namespaces)
		if r.State != nil {
			r.OwnerAlive = ownerAlive(r.State)
			r.Leaked = !r.OwnerAlive && !r.State.Detached
		} else {
			// No state file: another tool's or a test's namespaces, or a
			// crash before the state was written. In use if a process is
			// in one of them or holds one open.
			for _, n := range r.Namespaces {
				used, err := netnsInUse(n)
				if err != nil {
					errs = append(errs, err)
				}
				r.OwnerAlive = r.OwnerAlive || used
			}
			r.Leaked = !r.OwnerAlive
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out, errors.Join(errs...)
}

// Cleanup removes this machine's labs: namespaces with the lab prefix (and
// the processes in them) and state files, grouped by run. Labs whose owning
// process still runs (and that were not left up by `cnibench lab up`) are
// kept unless opts.Force.
func Cleanup(ctx context.Context, opts CleanupOptions) (CleanupResult, error) {
	var res CleanupResult
	unlock, err := acquireLock(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()
	runs, serr := Status()
	var errs []error
	if serr != nil {
		errs = append(errs, serr)
	}
	for _, r := range runs {
		if opts.RunID != "" && r.RunID != opts.RunID {
			continue
		}
		if r.OwnerAlive && (r.State == nil || !r.State.Detached) && !opts.Force {
			res.Kept = append(res.Kept, r.RunID)
			continue
		}
		var rerrs []error
		for _, n := range r.Namespaces {
			if err := removeNS(n); err != nil {
				rerrs = append(rerrs, err)
			}
		}
		if err := os.Remove(StatePath(r.RunID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			rerrs = append(rerrs, fmt.Errorf("remove lab state: %w", err))
		}
		if len(rerrs) > 0 {
			errs = append(errs, fmt.Errorf("clean up run %s: %w", r.RunID, errors.Join(rerrs...)))
			continue
		}
		res.Removed = append(res.Removed, r.RunID)
	}
	return res, errors.Join(errs...)
}
