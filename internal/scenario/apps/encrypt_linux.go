package apps

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/encrypt"
	"github.com/cnibench/cnibench/pkg/result"
)

// tunnelled is an application's daemon running through the encryption
// scenario's tunnel between the nodes (scenario.Prepared,
// scenario.Measurer, scenario.Checker): the tunnel prepared first, the
// daemon second, closed in reverse.
type tunnelled struct {
	tun            scenario.Prepared
	app            *prepared
	client, server netip.Addr
	metrics        map[string]float64
	config         map[string]string
}

// prepareEncrypted sets up the point's tunnel (encrypt's Prepare with the
// point's encryption labels), then the application's daemon.
func (s *Scenario) prepareEncrypted(ctx context.Context, env scenario.Env, sp scenario.Point) (scenario.Prepared, error) {
	if s.enc == nil {
		return nil, errors.New("apps: an encryption point, but no --app-encrypt")
	}
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	client, ok := podIP(lx.Topology, lx.Endpoint.Client)
	if !ok {
		return nil, fmt.Errorf("apps: --app-encrypt needs a routed datapath (its pods' addresses and nodes), e.g. %s; %s has none", lab.ScenarioDatapath, env.Datapath)
	}
	tun, err := s.enc.Prepare(ctx, env, sp)
	if err != nil {
		return nil, fmt.Errorf("apps through %s: %w", sp.Labels[encrypt.LabelEncryption], err)
	}
	ap, err := s.prepare(ctx, env, sp)
	if err != nil {
		_, cerr := tun.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(err, cerr)
	}
	t := &tunnelled{tun: tun, app: ap.(*prepared), client: client, server: lx.Endpoint.ServerIP,
		metrics: map[string]float64{}, config: map[string]string{}}
	maps.Copy(t.metrics, tun.Metrics())
	maps.Copy(t.metrics, ap.Metrics())
	maps.Copy(t.config, tun.Config())
	maps.Copy(t.config, ap.Config())
	return t, nil
}

// podIP is the address of the pod whose namespace is ns.
func podIP(topo *lab.Topology, ns *lab.NS) (netip.Addr, bool) {
	if topo == nil || ns == nil {
		return netip.Addr{}, false
	}
	for _, p := range topo.Pods {
		if p.NS == ns && p.IP.IsValid() {
			return p.IP, true
		}
	}
	return netip.Addr{}, false
}

func (t *tunnelled) Metrics() map[string]float64 { return t.metrics }
func (t *tunnelled) Config() map[string]string   { return t.config }

// Measure implements scenario.Measurer: the application's cell.
func (t *tunnelled) Measure(ctx context.Context, c scenario.Cell, w scenario.Window) (*result.Result, error) {
	return t.app.Measure(ctx, c, w)
}

// BeginCell implements scenario.Checker: the wire proof of the
// encryption point for the pods' traffic (encrypt.BeginPodCell; the
// applications' files carry no payload marker, so the proof is that no
// packet between the pods crossed in clear while the tunnel's did).
func (t *tunnelled) BeginCell(scenario.Cell) (func() (map[string]float64, error), error) {
	return encrypt.BeginPodCell(t.tun, t.client, t.server)
}

// Close implements scenario.Prepared: the daemon first, then the tunnel.
func (t *tunnelled) Close(ctx context.Context) (map[string]float64, error) {
	m1, err1 := t.app.Close(ctx)
	m2, err2 := t.tun.Close(ctx)
	m := map[string]float64{}
	maps.Copy(m, m1)
	maps.Copy(m, m2)
	return m, errors.Join(err1, err2)
}
