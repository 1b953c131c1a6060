package suite

import (
	"context"
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/lab"
)

// labBackend is the local lab as a backend.Backend: nodes and pods are
// network namespaces, servers and clients are processes of this suite's
// spawner (pinned CPUs, its cgroup, the run's token).
type labBackend struct{ st *state }

func (labBackend) Name() string { return "lab" }

// labPlace is a namespace where a client runs.
type labPlace struct{ ns *lab.NS }

func (p labPlace) String() string { return p.ns.Name }

// labDeployment is one lab (one wire MTU) with its servers.
type labDeployment struct {
	st    *state
	l     *lab.Lab
	spec  backend.Spec
	byPod map[string]*server // one server per pod and address
	paths map[string][]backend.Path
}

func (b labBackend) Up(ctx context.Context, spec backend.Spec) (backend.Deployment, error) {
	st := b.st
	l := lab.New(st.log)
	d := &labDeployment{st: st, l: l, spec: spec, byPod: map[string]*server{}, paths: map[string][]backend.Path{}}
	st.progressf("lab: building %d datapath(s) with wire MTU %d, %s wire", len(spec.Datapaths), spec.MTU, spec.Wire)
	if err := l.Up(ctx, lab.Options{Datapaths: spec.Datapaths, MTU: spec.MTU, Wire: spec.Wire}); err != nil {
		return d, fmt.Errorf("bring the lab up (MTU %d): %w", spec.MTU, err)
	}
	for _, dp := range l.Datapaths() {
		_, topo, err := l.Datapath(dp)
		if err != nil {
			return d, err
		}
		for _, ep := range topo.Paths {
			// Paths may share a server pod.
			pod := ep.Server.Name + "/" + ep.ServerIP.String()
			s, ok := d.byPod[pod]
			if !ok {
				if s, err = st.startServer(ctx, ep); err != nil {
					return d, fmt.Errorf("start the server of %s/%s: %w", dp, ep.Kind, err)
				}
				d.byPod[pod] = s
			}
			d.paths[dp] = append(d.paths[dp], backend.Path{
				Kind: string(ep.Kind), Client: labPlace{ep.Client}, Target: s.addr,
				PathMTU: topo.PathMTU, PodMTU: topo.PodMTU, Wire: topo.Wire,
			})
		}
	}
	return d, nil
}

func (d *labDeployment) Datapaths() []backend.Datapath { return labDatapaths(d.l, d.spec.Datapaths) }

// labDatapaths describes the named datapaths of a lab, skipped ones with
// their reason.
func labDatapaths(l *lab.Lab, names []string) []backend.Datapath {
	skipped := l.Skipped()
	var out []backend.Datapath
	for _, name := range names {
		x := backend.Datapath{Name: name, Description: lab.Describe(name)}
		if dp, _, err := l.Datapath(name); err == nil {
			x.Description, x.PacketPath = dp.Description(), dp.PacketPath()
		}
		if err, ok := skipped[name]; ok {
			x.Skipped = err.Error()
		}
		out = append(out, x)
	}
	return out
}

func (d *labDeployment) Paths(datapath string) []backend.Path { return d.paths[datapath] }

func (d *labDeployment) Run(ctx context.Context, place backend.Place, args []string) ([]byte, []byte, error) {
	p, ok := place.(labPlace)
	if !ok {
		return nil, nil, fmt.Errorf("lab: cannot run at %v", place)
	}
	stdout, stderr, err := d.st.runClientOutput(ctx, p.ns, args)
	return stdout.Bytes(), stderr.Bytes(), err
}

func (d *labDeployment) Reset(ctx context.Context, datapath string) (int, error) {
	_, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return -1, err
	}
	return resetTopology(ctx, topo)
}

// resetTopology flushes a lab topology's conntrack tables before a cell and
// returns its TIME_WAIT sockets (-1 if not counted).
func resetTopology(ctx context.Context, topo *lab.Topology) (int, error) {
	var errs []error
	if err := topo.ResetState(ctx); err != nil {
		errs = append(errs, fmt.Errorf("reset between cells failed (conntrack entries may carry over): %w", err))
	}
	tw, err := topo.TimeWait()
	if err != nil {
		tw = -1
		errs = append(errs, fmt.Errorf("TIME_WAIT sockets not counted: %w", err))
	}
	return tw, errors.Join(errs...)
}

func (d *labDeployment) Evidence(datapath string) backend.Evidence {
	dp, topo, err := d.l.Datapath(datapath)
	if err != nil {
		return nil
	}
	return newLabEvidence(datapath, dp, topo)
}

// Labels: lab runs carry no backend label (results of earlier versions
// compare with new ones unchanged); the set's config says "backend: lab".
func (d *labDeployment) Labels() map[string]string { return nil }

func (d *labDeployment) Down(ctx context.Context) error {
	for _, s := range d.byPod {
		s.stop()
	}
	return d.l.Down(ctx)
}
