package proxies

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

// state is what the scenario keeps across points: the prepared points not
// yet closed, which Close closes (an interrupted run).
type state struct {
	mu   sync.Mutex
	live map[*prepared]struct{}
}

// Close implements scenario.Scenario: every point still prepared is
// closed (its proxies and server stopped, its directory removed).
func (s *Scenario) Close(ctx context.Context) error {
	s.mu.Lock()
	live := s.live
	s.live = nil
	s.mu.Unlock()
	var errs []error
	for pr := range live {
		_, err := pr.Close(ctx)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// prepared is one point set up: the server, its proxies, the client's URL.
type prepared struct {
	s       *Scenario
	p       point
	client  *lab.NS
	url     string
	proxies []*proxyProc
	spawner *lab.Spawner // the proxies' parent, from the first proxy on
	metrics map[string]float64
	config  map[string]string
	undo    []func() error // in reverse order at Close
	once    sync.Once
	err     error
}

// proxied is a prepared point with proxies: it records their CPU around
// every cell and fails the cell if one exited (scenario.Checker). Without
// proxies (0 hops) the suite's own path checks apply.
type proxied struct{ *prepared }

func (pr *prepared) Metrics() map[string]float64 { return pr.metrics }
func (pr *prepared) Config() map[string]string   { return pr.config }

// Close implements scenario.Prepared: proxies, server and files removed,
// once.
func (pr *prepared) Close(context.Context) (map[string]float64, error) {
	pr.once.Do(func() {
		var errs []error
		for i := len(pr.undo) - 1; i >= 0; i-- {
			errs = append(errs, pr.undo[i]())
		}
		pr.undo = nil
		pr.err = errors.Join(errs...)
		pr.s.mu.Lock()
		delete(pr.s.live, pr)
		pr.s.mu.Unlock()
	})
	return nil, pr.err
}

// Target implements scenario.Targeter: the client pod, pointed at the
// first proxy (or the server at 0 hops).
func (pr *prepared) Target(scenario.Cell) (scenario.Target, error) {
	args := []string{"--url", pr.url}
	if pr.p.keepAlive {
		args = append(args, "--http-keepalive")
	}
	return scenario.Target{Client: pr.client, Args: args}, nil
}

// BeginCell implements scenario.Checker: each proxy's CPU ticks now; the
// returned function reads them again and returns the differences (per
// role and summed, seconds and % of one core over the cell), or an error
// if a proxy is no longer running.
func (px proxied) BeginCell(scenario.Cell) (func() (map[string]float64, error), error) {
	t0 := time.Now()
	before := make([]uint64, len(px.proxies))
	for i, p := range px.proxies {
		t, err := p.ticks()
		if err != nil {
			return nil, err
		}
		before[i] = t
	}
	return func() (map[string]float64, error) {
		span := time.Since(t0).Seconds()
		ticks := map[string]uint64{}
		for i, p := range px.proxies {
			t, err := p.ticks()
			if err != nil {
				return nil, err
			}
			if t >= before[i] {
				ticks[p.cfg.Role] += t - before[i]
			}
		}
		return cpuMetrics(ticks, span), nil
	}, nil
}

// Prepare implements scenario.Scenario: `cnibench serve --http-listen` in
// the server pod, then the point's proxies (none; one on the client's node;
// one in each pod), then a GET through them from the client pod.
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, sp scenario.Point) (scenario.Prepared, error) {
	p, err := pointOf(sp)
	if err != nil {
		return nil, err
	}
	if err := probe(p.proxy); err != nil {
		return nil, err
	}
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("proxies: %w", err)
	}
	ep := lx.Endpoint
	if lx.Topology == nil || ep.Client == nil || ep.Server == nil || !ep.ServerIP.IsValid() || isNode(lx.Topology, ep.Client) || isNode(lx.Topology, ep.Server) {
		return nil, fmt.Errorf("proxies: datapath %s has no client and server pods (the node-to-node baseline): %w", env.Datapath, ErrNotSupported)
	}
	if env.Serve == nil {
		return nil, errors.New("proxies: no way to start the HTTP server (not run by the suite)")
	}
	pr := &prepared{s: s, p: p, client: ep.Client, metrics: map[string]float64{},
		config: map[string]string{"proxy": p.proxy, "proxy_hops": fmt.Sprint(p.hops)}}
	s.mu.Lock()
	if s.live == nil {
		s.live = map[*prepared]struct{}{}
	}
	s.live[pr] = struct{}{}
	s.mu.Unlock()
	fail := func(err error) (scenario.Prepared, error) {
		_, cerr := pr.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(err, cerr)
	}
	t0 := time.Now()
	sweepStaleDirs()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return fail(fmt.Errorf("proxies: temporary directory: %w", err))
	}
	pr.undo = append(pr.undo, func() error { return os.RemoveAll(dir) })
	srv, err := env.Serve(ctx, ep.Server,
		"--listen", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ServerControlPort).String(),
		"--http-listen", fmt.Sprintf("0.0.0.0:%d", ServerHTTPPort), "--max-flows", "4096")
	if err != nil {
		return fail(fmt.Errorf("proxies: start the HTTP server in %s: %w", ep.Server.Name, err))
	}
	pr.undo = append(pr.undo, func() error { srv.Stop(); return nil })
	server := netip.AddrPortFrom(ep.ServerIP, ServerHTTPPort)
	loop := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	first := server
	switch p.hops {
	case 0:
		pr.config["proxy_path"] = "client pod → server pod " + server.String()
	case 1:
		node, router, err := pr.routerAddress(lx)
		if err != nil {
			return fail(err)
		}
		first = netip.AddrPortFrom(router, NodeProxyPort)
		err = pr.start(ctx, node, ProxyConfig{Kind: p.proxy, Role: RoleNode, Listen: first, Upstream: server, Source: router,
			KeepAlive: p.keepAlive, Dir: filepath.Join(dir, RoleNode)})
		if err != nil {
			return fail(err)
		}
		pr.config["proxy_path"] = fmt.Sprintf("client pod → %s on node %s (router address %v, from the node's pod CIDR) → server pod %v", p.proxy, node.Name, first, server)
	case 2:
		inbound := netip.AddrPortFrom(ep.ServerIP, InboundPort)
		first = netip.AddrPortFrom(loop, OutboundPort)
		err := pr.start(ctx, ep.Server, ProxyConfig{Kind: p.proxy, Role: RoleServerSidecar, Listen: inbound,
			Upstream: netip.AddrPortFrom(loop, ServerHTTPPort), KeepAlive: p.keepAlive, Dir: filepath.Join(dir, RoleServerSidecar)})
		if err == nil {
			err = pr.start(ctx, ep.Client, ProxyConfig{Kind: p.proxy, Role: RoleClientSidecar, Listen: first,
				Upstream: inbound, KeepAlive: p.keepAlive, Dir: filepath.Join(dir, RoleClientSidecar)})
		}
		if err != nil {
			return fail(err)
		}
		pr.config["proxy_path"] = fmt.Sprintf("client pod → %s sidecar on its loopback %v → %s sidecar in the server pod %v → server on its loopback :%d",
			p.proxy, first, p.proxy, inbound, ServerHTTPPort)
	}
	pr.url = "http://" + first.String() + "/"
	if err := pr.verify(ctx); err != nil {
		return fail(err)
	}
	pr.metrics["proxies_setup_seconds"] = time.Since(t0).Seconds()
	if p.hops == 0 {
		return pr, nil
	}
	return proxied{pr}, nil
}

// dirPrefix starts the name of a point's temporary directory, followed by
// the owning process's pid: "cnibench-proxies-<pid>-<random>".
const dirPrefix = "cnibench-proxies-"

// sweepStaleDirs removes the temporary directories of runs that are gone
// (killed with SIGKILL, which no Close follows); a live run's are kept.
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), dirPrefix), "-", 2)[0])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// start starts one proxy in ns and waits until it listens.
func (pr *prepared) start(ctx context.Context, ns *lab.NS, cfg ProxyConfig) error {
	if pr.spawner == nil {
		sp, err := lab.NewSpawner()
		if err != nil {
			return fmt.Errorf("proxies: %w", err)
		}
		pr.spawner = sp
		// Closed after the proxies it started have stopped (undo runs
		// in reverse).
		pr.undo = append(pr.undo, func() error { sp.Close(); return nil })
	}
	px, err := startProxy(pr.spawner, ns, cfg)
	if err != nil {
		return fmt.Errorf("proxies: %w", err)
	}
	pr.undo = append(pr.undo, func() error { px.stop(); return nil })
	pr.proxies = append(pr.proxies, px)
	if err := px.waitListening(ctx, 5*time.Second); err != nil {
		return fmt.Errorf("proxies: %w", err)
	}
	return nil
}

// verify sends GETs from the client pod to the URL until one is answered
// 200 through every hop (the server may still be starting), within 5 s.
func (pr *prepared) verify(ctx context.Context) error {
	addr := strings.TrimSuffix(strings.TrimPrefix(pr.url, "http://"), "/")
	deadline := time.Now().Add(5 * time.Second)
	var status string
	var err error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for _, px := range pr.proxies {
			if aerr := px.alive(); aerr != nil {
				return fmt.Errorf("proxies: %w", aerr)
			}
		}
		status, err = httpGet(pr.client, addr, time.Second)
		if err == nil && strings.Contains(status, " 200") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err == nil {
		err = fmt.Errorf("answered %q", status)
	}
	return fmt.Errorf("proxies: a GET of %s from the client pod through %d hop(s) failed: %w", pr.url, pr.p.hops, err)
}

// isNode reports whether ns is one of the topology's nodes.
func isNode(t *lab.Topology, ns *lab.NS) bool {
	return ns == t.Nodes[0] || ns == t.Nodes[1]
}

// routerAddress gives the client pod's node a router address (a /32 on
// its loopback, undone at Close): the last address of the node's pod CIDR,
// as Cilium's cilium_host takes one of the node's pod addresses. The
// client pod reaches it through its node (local delivery), and the node
// proxy's upstream connections leave from it: the lab's nodes forward
// only pod-to-pod traffic, as a CNI's policy would.
func (pr *prepared) routerAddress(lx *lab.Access) (*lab.NS, netip.Addr, error) {
	node, idx, err := clientNode(lx)
	if err != nil {
		return nil, netip.Addr{}, err
	}
	cidr := lab.PodCIDRs[idx]
	router := lastHost(cidr)
	for _, pod := range lx.Topology.Pods {
		if pod.IP == router {
			return nil, netip.Addr{}, fmt.Errorf("proxies: router address %v is pod %s's: %w", router, pod.Role, ErrNotSupported)
		}
	}
	lo, err := node.Handle().LinkByName("lo")
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("proxies: find lo in %s: %w", node.Name, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(router.AsSlice()), Mask: net.CIDRMask(32, 32)}}
	if err := node.Handle().AddrAdd(lo, a); err != nil {
		return nil, netip.Addr{}, fmt.Errorf("proxies: add router address %v to %s: %w", router, node.Name, err)
	}
	pr.undo = append(pr.undo, func() error {
		if err := node.Handle().AddrDel(lo, a); err != nil {
			return fmt.Errorf("proxies: remove router address %v from %s: %w", router, node.Name, err)
		}
		return nil
	})
	return node, router, nil
}

// lastHost is the last address of an IPv4 prefix before its broadcast
// address (198.19.1.254 for 198.19.1.0/24).
func lastHost(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v |= (1<<(32-p.Bits()) - 1)
	v--
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// clientNode finds the client pod's node and its index: the endpoint's
// ClientNode (routed datapaths), else the pod's node in the topology, else
// the node whose pod CIDR holds the pod's address.
func clientNode(lx *lab.Access) (*lab.NS, int, error) {
	topo, ep := lx.Topology, lx.Endpoint
	idx := -1
	for i, n := range topo.Nodes {
		if n != nil && n == ep.ClientNode {
			idx = i
		}
	}
	for _, pod := range topo.Pods {
		if idx < 0 && pod.NS == ep.Client {
			idx = pod.Node
		}
	}
	if idx < 0 {
		if l, err := ep.Client.Handle().LinkByName(lab.PodIf); err == nil {
			addrs, _ := ep.Client.Handle().AddrList(l, netlink.FAMILY_V4)
			for _, a := range addrs {
				ip, ok := netip.AddrFromSlice(a.IP.To4())
				for i, cidr := range lab.PodCIDRs {
					if ok && cidr.Contains(ip) {
						idx = i
					}
				}
			}
		}
	}
	if idx < 0 || idx >= len(topo.Nodes) || topo.Nodes[idx] == nil {
		return nil, 0, fmt.Errorf("proxies: the client pod's node is unknown on this datapath: %w", ErrNotSupported)
	}
	return topo.Nodes[idx], idx, nil
}
