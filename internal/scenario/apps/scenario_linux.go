package apps

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/scenario"
)

// labDeployment is what the scenario needs of a lab deployment (the lab
// backend's have it): the datapath's topology.
type labDeployment interface {
	LabAccess(datapath string) (*lab.Access, error)
}

var _ labDeployment = (*lab.Deployment)(nil)

type state struct{}

// Close implements scenario.Scenario: every point undoes itself.
func (s *Scenario) Close(context.Context) error { return nil }

// prepared is one application's daemon running in the server pod's
// namespace (scenario.Prepared, scenario.Measurer).
type prepared struct {
	s       *Scenario
	app     string
	ep      lab.Endpoint
	dir     string
	l       layout
	servers *lab.Spawner // the daemon (its cgroup: the server's CPU)
	clients *lab.Spawner
	d       *daemon
	bins    map[string]string
	metrics map[string]float64
	config  map[string]string
	once    sync.Once
}

func (pr *prepared) Metrics() map[string]float64 { return pr.metrics }
func (pr *prepared) Config() map[string]string   { return pr.config }

// Close implements scenario.Prepared: the daemon stopped, every process
// the point started killed (the spawners' cgroups), its directory
// removed.
func (pr *prepared) Close(context.Context) (map[string]float64, error) {
	var err error
	pr.once.Do(func() {
		if pr.d != nil {
			pr.d.stop()
		}
		if pr.clients != nil {
			pr.clients.Close()
		}
		if pr.servers != nil {
			pr.servers.Close()
		}
		if pr.dir != "" {
			err = os.RemoveAll(pr.dir)
		}
	})
	return nil, err
}

// Prepare implements scenario.Scenario: the application's files, keys and
// config in a new temporary directory, its daemon started in the server
// pod's namespace and listening.
// A point crossed with an encryption point (--app-encrypt) runs through
// its tunnel (prepareEncrypted).
func (s *Scenario) Prepare(ctx context.Context, env scenario.Env, sp scenario.Point) (scenario.Prepared, error) {
	if encrypted(sp) {
		return s.prepareEncrypted(ctx, env, sp)
	}
	return s.prepare(ctx, env, sp)
}

// prepare starts the point's daemon.
func (s *Scenario) prepare(ctx context.Context, env scenario.Env, sp scenario.Point) (scenario.Prepared, error) {
	app := sp.Labels[LabelApp]
	lx, err := scenario.Access(env, scenario.ErrNeedsLab, labDeployment.LabAccess)
	if err != nil {
		return nil, fmt.Errorf("apps: %w (on Kubernetes the pods need an image with the daemons)", err)
	}
	ep := lx.Endpoint
	if ep.Client == nil || ep.Server == nil || !ep.ServerIP.IsValid() {
		return nil, errors.New("apps: the datapath has no client and server pod")
	}
	if err := probe(app); err != nil {
		return nil, fmt.Errorf("apps: %w", err)
	}
	pr := &prepared{s: s, app: app, ep: ep, bins: map[string]string{}, metrics: map[string]float64{},
		config: map[string]string{"app_server_ip": ep.ServerIP.String()}}
	if err := pr.prepare(ctx); err != nil {
		_, cerr := pr.Close(context.WithoutCancel(ctx))
		return nil, errors.Join(fmt.Errorf("apps %s: %w", app, err), cerr)
	}
	return pr, nil
}

func (pr *prepared) prepare(ctx context.Context) error {
	t0 := time.Now()
	for _, p := range programs[pr.app] {
		bin, err := lookProgram(p)
		if err != nil {
			return err
		}
		pr.bins[p] = bin
	}
	var err error
	if pr.dir, err = os.MkdirTemp("", "cnibench-apps-"+pr.app+"-"); err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	pr.l = newLayout(pr.dir)
	if err := writeFiles(pr.l, pr.s.sizes); err != nil {
		return fmt.Errorf("write the files: %w", err)
	}
	if pr.servers, err = lab.NewSpawner(); err != nil {
		return err
	}
	if pr.clients, err = lab.NewSpawner(); err != nil {
		return err
	}
	ip := pr.ep.ServerIP
	var (
		conf, confName string
		port           int
	)
	switch pr.app {
	case HTTP:
		conf, confName, port = nginxConf(pr.l, ip), "nginx.conf", HTTPPort
		pr.config["app_server"] = version(pr.bins["nginx"], "-v")
		pr.config["app_client"] = version(pr.bins["curl"], "--version")
	case FTP:
		conf, confName, port = vsftpdConf(pr.l, ip), "vsftpd.conf", FTPPort
		pr.config["app_server"] = "vsftpd " + debVersion("vsftpd")
		pr.config["app_client"] = version(pr.bins["curl"], "--version")
	case SCP:
		conf, confName, port = sshdConf(pr.l, ip), "sshd_config", SSHPort
		if err := sshKeygen(ctx, pr.bins["ssh-keygen"], pr.l.path("ssh_host_ed25519_key")); err != nil {
			return err
		}
		if err := sshKeygen(ctx, pr.bins["ssh-keygen"], pr.l.path("client_key")); err != nil {
			return err
		}
		pub, err := os.ReadFile(pr.l.path("client_key.pub"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(pr.l.path("authorized_keys"), pub, 0o600); err != nil {
			return err
		}
		pr.config["app_server"] = "OpenSSH sshd " + debVersion("openssh-server")
		pr.config["app_client"] = version(pr.bins["ssh"], "-V") + " (scp over SFTP, the default cipher negotiated)"
	}
	if err := os.WriteFile(pr.l.path(confName), []byte(conf), 0o600); err != nil {
		return err
	}
	var start = nginxCmd
	switch pr.app {
	case FTP:
		start = vsftpdCmd
	case SCP:
		start = sshdCmd
	}
	server := programs[pr.app][0]
	addr := netip.AddrPortFrom(ip, uint16(port))
	if pr.d, err = startDaemon(ctx, pr.servers, pr.ep.Server, server, start(ctx, pr.bins[server], pr.l), addr); err != nil {
		return err
	}
	pr.config["app_listen"] = addr.String()
	if _, err := pr.servers.Cgroup(); err == nil {
		pr.config["app_server_cpu"] = "the daemon's own cgroup v2: cpu.stat usage_usec"
	} else {
		pr.config["app_server_cpu"] = "/proc process tree (10 ms ticks)"
	}
	pr.metrics["app_setup_seconds"] = time.Since(t0).Seconds()
	return nil
}

// serverCPU is the daemon's CPU seconds so far: its cgroup's usage when
// the spawner has one (every process of the daemon, µs), else its process
// tree in /proc.
func (pr *prepared) serverCPU() (float64, error) {
	if cg, err := pr.servers.Cgroup(); err == nil {
		b, err := os.ReadFile(filepath.Join(cg, "cpu.stat"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
					us, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err == nil {
						return us / 1e6, nil
					}
				}
			}
		}
	}
	return procTreeCPU(pr.d.cmd.Process.Pid)
}

// debVersion is an installed Debian package's version, or "".
func debVersion(pkg string) string {
	return version("dpkg-query", "-W", "-f=${Version}", pkg)
}
