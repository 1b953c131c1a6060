package k8sagentcmd

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/kube/agent"
)

type inspectFlags struct {
	Addr string
}

func newInspect(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &inspectFlags{}
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Describe this network namespace: links, addresses, default routes, tunnels",
		Long: "inspect prints this network namespace's links (type, MTU, state, addresses,\n" +
			"VNI and port of vxlan/geneve), its default routes, its tunnel links with their\n" +
			"encapsulation overhead and, with --addr, the link that holds that address.\n" +
			"Schema " + agent.SchemaInspect + ".",
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			var ip netip.Addr
			if flags.Addr != "" {
				var err error
				if ip, err = netip.ParseAddr(flags.Addr); err != nil {
					return clierr.Usagef("--addr %q: not an IP address; give one such as 10.0.0.1 or fd00::1", flags.Addr)
				}
			}
			in, err := agent.InspectNetns(ip)
			if werr := writeJSON(s, in); werr != nil {
				return werr
			}
			if err != nil {
				return fmt.Errorf("agent inspect: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&flags.Addr, "addr", "", "also name the link that holds this IP address (e.g. the node's InternalIP)")
	return cmd
}

type cniConfFlags struct {
	Dir string
}

func newCNIConf(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &cniConfFlags{}
	cmd := &cobra.Command{
		Use:   "cni-conf",
		Short: "Read a CNI configuration directory as the container runtime does",
		Long: "cni-conf reads the CNI configuration directory --dir as the container runtime\n" +
			"does (*.conf, *.conflist and *.json, sorted by name; the first valid file is in\n" +
			"use) and prints each file's network, plugins and validity, the file in use, its\n" +
			"plugins and its main plugin's MTU. A missing directory or one without a valid\n" +
			"file is an answer (the \"error\" field), not a failure. Schema " + agent.SchemaCNIConf + ".",
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := checkDir("dir", flags.Dir, "/host/etc/cni/net.d"); err != nil {
				return err
			}
			return writeJSON(s, agent.ReadCNIConfDir(flags.Dir))
		},
	}
	cmd.Flags().StringVar(&flags.Dir, "dir", "/host/etc/cni/net.d", "the CNI configuration directory (the host's /etc/cni/net.d, mounted by hostPath)")
	return cmd
}

type cgroupFlags struct {
	Root    string
	PodUIDs []string
	Paths   []string
}

func newCgroup(_ *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &cgroupFlags{}
	cmd := &cobra.Command{
		Use:   "cgroup",
		Short: "Read pods' cumulative CPU time and memory working set from the host's cgroups",
		Long: "cgroup finds each --pod-uid's cgroup under --root (cgroup v1 with the cgroupfs or\n" +
			"systemd driver, v2, or hybrid, preferring v1's controllers) and prints its\n" +
			"cumulative CPU time (ns) and memory working set (bytes, as the kubelet computes\n" +
			"it) with the time of reading. A pod not found has an \"error\"; the exit status\n" +
			"is still 0. --cgroup reads a cgroup by its path below each hierarchy instead\n" +
			"(a node service's, e.g. system.slice/kube-proxy.service). Schema " + agent.SchemaCgroup + ".",
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := checkDir("root", flags.Root, agent.DefaultCgroupRoot); err != nil {
				return err
			}
			if len(flags.PodUIDs) == 0 && len(flags.Paths) == 0 {
				return clierr.Usagef("--pod-uid: give at least one pod UID (repeat the flag or separate UIDs with commas), or a --cgroup path")
			}
			for _, p := range flags.Paths {
				if !agent.ValidCgroupPath(p) {
					return clierr.Usagef("--cgroup %q: not a cgroup path below a hierarchy (relative, no '..', printable), e.g. system.slice/kube-proxy.service", p)
				}
			}
			for _, u := range flags.PodUIDs {
				if !validUID(u) {
					return clierr.Usagef("--pod-uid %q: not a pod UID (1 to 128 letters, digits, '-' or '_'), e.g. 6f1c2c9e-8f0a-4c2b-9a55-0d3d0b6c1e7f", u)
				}
			}
			rep := agent.ReadPodCgroups(flags.Root, flags.PodUIDs, nil)
			agent.ReadPathCgroups(&rep, flags.Root, flags.Paths, nil)
			return writeJSON(s, rep)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&flags.Root, "root", agent.DefaultCgroupRoot, "the host's cgroup filesystem (its /sys/fs/cgroup, mounted by hostPath)")
	fl.StringSliceVar(&flags.PodUIDs, "pod-uid", nil, "a pod's UID (metadata.uid; a static pod's is its config hash); repeatable")
	fl.StringArrayVar(&flags.Paths, "cgroup", nil, "a cgroup's path below each hierarchy (a process outside pods, e.g. system.slice/kube-proxy.service); repeatable")
	return cmd
}

// validUID accepts what a pod UID can be: a UUID, or a static pod's
// config hash.
func validUID(u string) bool {
	if u == "" || len(u) > 128 {
		return false
	}
	return strings.IndexFunc(u, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
	}) < 0
}
