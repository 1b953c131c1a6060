package k8sagentcmd

import (
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/scenario/egress/incluster"
)

type egressFilterFlags struct {
	Mechanism string
	Rules     int
	Seed      uint64
	Traversal string
	Denied    string
	Allowed   string
	Dev       string
	Wait      time.Duration
}

func newEgressFilter(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &egressFilterFlags{}
	cmd := &cobra.Command{
		Use:   "egress-filter",
		Short: "Load a raw egress filter on this pod's own egress, prove it, hold it, remove it",
		Long: "egress-filter loads --mechanism (nftables, ebpf-lpm, ebpf-hash; iptables and ipset\n" +
			"where the image has their programs) on this pod's own egress (--dev, default the\n" +
			"default route's interface) with --rules deny CIDRs: --rules-1 generated from --seed\n" +
			"in 240.0.0.0/4 and --denied's address. It proves enforcement by probing --denied\n" +
			"every 2 ms while --allowed keeps answering, prints one JSON line (phase \"loaded\"),\n" +
			"holds the filter until a line or the end of stdin, then removes it, proves the\n" +
			"release and prints a second line (phase \"removed\"). Needs NET_ADMIN (and BPF for\n" +
			"the eBPF mechanisms). Schema " + incluster.SchemaPodFilter + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			return incluster.RunInPod(ctx, o, s.In, s.Out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Mechanism, "mechanism", "", "the filter mechanism: "+strings.Join(filter.Mechanisms(), ", "))
	fl.IntVar(&f.Rules, "rules", 0, "deny CIDRs in the set (at least 1)")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the generated CIDRs")
	fl.StringVar(&f.Traversal, "traversal", filter.TraversalEveryPacket, "every-packet or new-connection")
	fl.StringVar(&f.Denied, "denied", "", "IP:PORT of the server the deny set covers (must stop answering)")
	fl.StringVar(&f.Allowed, "allowed", "", "IP:PORT of a server that must keep answering")
	fl.StringVar(&f.Dev, "dev", "", "the pod's interface (default: the default route's)")
	fl.DurationVar(&f.Wait, "wait", time.Minute, "bound on each proof")
	return cmd
}

func (f *egressFilterFlags) options() (incluster.PodOptions, error) {
	o := incluster.PodOptions{Mechanism: f.Mechanism, Rules: f.Rules, Seed: f.Seed, Traversal: f.Traversal, Dev: f.Dev, Wait: f.Wait}
	var err error
	switch {
	case !slices.Contains(filter.Mechanisms(), f.Mechanism) || f.Mechanism == "none":
		return o, clierr.Usagef("--mechanism %q: must be one of %s (not none)", f.Mechanism, strings.Join(filter.Mechanisms(), ", "))
	case f.Rules < 1:
		return o, clierr.Usagef("--rules %d: must be at least 1", f.Rules)
	case !slices.Contains(filter.Traversals, f.Traversal):
		return o, clierr.Usagef("--traversal %q: must be one of %s", f.Traversal, strings.Join(filter.Traversals, ", "))
	case f.Wait <= 0 || f.Wait > maxWatchWait:
		return o, clierr.Usagef("--wait %s: must be above 0 and at most %s", f.Wait, maxWatchWait)
	}
	if o.Denied, err = netip.ParseAddrPort(f.Denied); err != nil || !o.Denied.Addr().Is4() {
		return o, clierr.Usagef("--denied %q: must be an IPv4 IP:PORT, e.g. 10.244.1.7:12870", f.Denied)
	}
	if o.Allowed, err = netip.ParseAddrPort(f.Allowed); err != nil {
		return o, clierr.Usagef("--allowed %q: must be IP:PORT, e.g. 10.244.2.9:12870", f.Allowed)
	}
	return o, nil
}
