// Package k8s implements `cnibench k8s`: the Kubernetes backend's
// housekeeping (rbac, clean) and the hidden agent its pods run. The
// benchmark itself runs with `cnibench suite --backend kubernetes`.
package k8scmd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	k8sagentcmd "github.com/cnibench/cnibench/internal/cli/k8sagent"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/kube/rbac"
)

// NewCommand returns the k8s command group.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes backend housekeeping: the RBAC it needs, removing leftovers",
		Long: "The Kubernetes backend runs the suite in pods of a real cluster:\n" +
			"  cnibench suite --backend kubernetes [--kubeconfig F] [--context C] [--namespace N] …\n" +
			"These commands print the permissions it needs and remove what a crashed run left.\n" +
			"See docs/kubernetes.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRBAC(s), newClean(logger, s))
	agent := k8sagentcmd.NewCommand(logger, s)
	agent.Hidden = true
	cmd.AddCommand(agent)
	return cmd
}

type rbacFlags struct {
	Namespace         string
	ExistingNamespace bool
	CNINamespaces     string
}

// options validates the flags into the kube package's options; a bad
// value is a usage error of one line naming the flag.
func (f *rbacFlags) options() (rbac.Options, error) {
	o := rbac.Options{Namespace: f.Namespace}
	if err := rbac.ValidateNamespaceName(f.Namespace); err != nil {
		return o, clierr.Usagef("--namespace: %v", err)
	}
	if f.ExistingNamespace {
		o.Mode = rbac.ExistingNamespace
	}
	if f.CNINamespaces == "" {
		return o, nil
	}
	if !f.ExistingNamespace {
		return o, clierr.Usagef("--cni-namespaces: applies to --existing-namespace only (the full RBAC lists pods in every namespace)")
	}
	o.CNINamespaces = []string{}
	for _, ns := range strings.Split(f.CNINamespaces, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			return o, clierr.Usagef("--cni-namespaces %q: empty element; separate names with single commas, e.g. --cni-namespaces kube-system,cilium", f.CNINamespaces)
		}
		if err := rbac.ValidateNamespaceName(ns); err != nil {
			return o, clierr.Usagef("--cni-namespaces: %v", err)
		}
		o.CNINamespaces = append(o.CNINamespaces, ns)
	}
	return o, nil
}

func newRBAC(s streams.IOStreams) *cobra.Command {
	f := &rbacFlags{}
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the minimal RBAC objects the Kubernetes backend needs (YAML for kubectl apply)",
		Long: "Rbac prints a ServiceAccount-bound ClusterRole (nodes, pods to identify the CNI,\n" +
			"namespaces, the CNIs' and kube-proxy's ConfigMaps by name, metrics) and a Role in the\n" +
			"run's namespace (pods, exec, services, secrets, network policies, endpoint slices),\n" +
			"each rule commented with why it is needed, and the Pod Security labels the namespace needs.\n\n" +
			"With --existing-namespace, for a namespace that exists beforehand, the least privilege:\n" +
			"cluster-wide only reads (nodes, ConfigMaps by name, metrics), pods list only in the CNIs'\n" +
			"namespaces (--cni-namespaces), no namespace created or deleted, and no cluster-scoped\n" +
			"policy objects (the egress-filter scenario's cilium-policy and calico-networkset).",
		Example: "  cnibench k8s rbac --namespace cnibench | kubectl apply -f -\n" +
			"  kubectl create namespace bench\n" +
			"  cnibench k8s rbac --namespace bench --existing-namespace --cni-namespaces kube-system,cilium | kubectl apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options()
			if err != nil {
				return err
			}
			y, err := rbac.YAMLFor(o)
			if err != nil {
				return err
			}
			_, err = s.Out.Write(y)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Namespace, "namespace", cluster.DefaultNamespace, "namespace of the runs (and of the ServiceAccount)")
	fl.BoolVar(&f.ExistingNamespace, "existing-namespace", false, "least privilege for a namespace that exists beforehand: cluster-wide reads only, no namespace create/delete")
	fl.StringVar(&f.CNINamespaces, "cni-namespaces", "", "with --existing-namespace: comma-separated namespaces where cnibench may list pods to identify the CNI, each of which must exist (default "+strings.Join(rbac.DefaultCNINamespaces(), ",")+")")
	return cmd
}

type cleanFlags struct {
	Kubeconfig, Context, Namespace string
	AllNamespaces                  bool
	Timeout                        time.Duration
}

func newClean(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	f := &cleanFlags{}
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what crashed Kubernetes runs left behind (objects labelled managed-by=cnibench)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kube.LoadConfig(f.Kubeconfig, f.Context)
			if err != nil {
				return err
			}
			cs, err := kube.NewClient(cfg)
			if err != nil {
				return err
			}
			ns := f.Namespace
			if f.AllNamespaces {
				ns = ""
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.Timeout)
			defer cancel()
			var opts []kube.CleanOption
			if dyn, err := kube.NewDynamicClient(cfg); err == nil {
				// The CNIs' cluster-scoped policy objects of the
				// egress-filter scenario, where the cluster serves them.
				opts = append(opts, kube.CleanPolicyObjects(dyn))
			}
			removed, err := kube.Clean(ctx, cs, ns, f.Timeout, opts...)
			for _, r := range removed {
				fmt.Fprintf(s.Out, "removed %s\n", r)
			}
			if err != nil {
				// One line: an unreachable cluster fails every list alike.
				lines := strings.Split(err.Error(), "\n")
				if len(lines) > 1 {
					logger.Debug("clean errors", "errors", lines)
					return fmt.Errorf("clean: %s (and %d more errors)", lines[0], len(lines)-1)
				}
				return fmt.Errorf("clean: %w", err)
			}
			if len(removed) == 0 {
				fmt.Fprintln(s.Out, "nothing to remove")
			}
			logger.Debug("clean done", "removed", len(removed))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&f.Context, "context", "", "kubeconfig context (default: the current one)")
	fl.StringVar(&f.Namespace, "namespace", cluster.DefaultNamespace, "namespace to clean (and the namespace itself if a run created it)")
	fl.BoolVar(&f.AllNamespaces, "all-namespaces", false, "clean every namespace")
	fl.DurationVar(&f.Timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}
