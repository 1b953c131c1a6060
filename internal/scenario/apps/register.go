package apps

import (
	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/pkg/result"
)

// Flags of the scenario.
const (
	flagApps    = "apps"
	flagSizes   = "app-sizes"
	flagEncrypt = "app-encrypt"
)

func init() {
	scenario.Register(scenario.Registration{
		Name:  ScenarioName,
		Usage: "real applications through the datapaths: nginx serving curl (HTTP, keep-alive on and off), vsftpd serving curl (FTP), sshd serving scp, at several file sizes",
		Flags: flags,
	})
}

// flags registers --apps and --app-sizes.
func flags(fs *pflag.FlagSet) scenario.Builder {
	apps := fs.String(flagApps, "http,ftp,scp", "apps: comma-separated applications among http (nginx + curl), ftp (vsftpd + curl), scp (sshd + scp)")
	sizes := fs.String(flagSizes, "4KiB,1MiB,64MiB", "apps: comma-separated file sizes (K, M, G: powers of 1024), each a cell: small objects show per-transfer latency, large ones throughput")
	encrypt := fs.String(flagEncrypt, "", "apps: also run the applications through the encryption scenario's tunnels between a routed datapath's nodes: comma-separated families wireguard, ipsec (kernel and userspace implementations, pods' MTU lowered; none always runs beside them; needs a routed datapath, e.g. veth-routing)")
	return func(c scenario.Common) (scenario.Scenario, error) {
		o := Options{Backend: c.Backend}
		var err error
		if o.Encrypt, err = scenario.ListFlag(c, flagEncrypt, *encrypt); err != nil {
			return nil, err
		}
		if o.Apps, err = scenario.ListFlag(c, flagApps, *apps); err != nil {
			return nil, err
		}
		if o.Sizes, err = scenario.ListFlag(c, flagSizes, *sizes); err != nil {
			return nil, err
		}
		return New(o)
	}
}

// Shape draws one grouped bar chart per application (test) and metric:
// groups the file sizes, bars HTTP's keep-alive on and off (one bar for
// FTP and scp); the report puts every datapath beside the others
// (scenario.Shaper).
func (s *Scenario) Shape() result.ScenarioShape {
	metrics := []string{result.ThroughputBitsPerSec, result.TransPerSec, result.LatencyUsP50, result.LatencyUsP99,
		result.ClientCPUPct, result.ServerCPUPct}
	per := map[string][]string{}
	for _, a := range Apps {
		per[Test(a)] = metrics
	}
	groups, headers := []string{LabelSize}, []string{"File size"}
	if s.enc != nil {
		// Through the tunnels: every encryption mode beside none.
		groups, headers = []string{encryptLabel, LabelSize}, []string{"Encryption", "File size"}
	}
	return result.ScenarioShape{
		Scenario: ScenarioName,
		Categorical: &result.CategoricalShape{
			Groups: groups, GroupHeaders: headers,
			Series: LabelKeepAlive, SeriesHeader: "Keep-alive (HTTP)",
			Intro: "Real applications through each datapath (seed 002): nginx serving curl over HTTP (keep-alive on and off), vsftpd serving curl over FTP (passive), OpenSSH's scp (its encryption on top of the datapath's). " +
				"Each cell transfers one file size back to back for the window; per-transfer times are the client's own report (curl's time_total; scp from process start to exit, SSH handshake included); " +
				"CPU is the client processes' rusage and the daemon's cgroup over the measured transfers. Median with 95 % CI.",
			Metrics: per,
		},
		MetricTitles: map[string]string{
			result.ClientCPUPct: "Client CPU (curl, scp + ssh)",
			result.ServerCPUPct: "Server CPU (the daemon)",
		},
	}
}
