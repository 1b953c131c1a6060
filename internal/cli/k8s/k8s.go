// Package k8s implements `cnibench k8s`: the Kubernetes backend's
// housekeeping (rbac, clean) and the hidden agent its pods run. The
// benchmark itself runs with `cnibench suite --backend kubernetes`.
package k8s

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/k8sagent"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/internal/kube"
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
	agent := k8sagent.NewCommand(logger, s)
	agent.Hidden = true
	cmd.AddCommand(agent)
	return cmd
}

type rbacFlags struct{ Namespace string }

func newRBAC(s streams.IOStreams) *cobra.Command {
	f := &rbacFlags{}
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Print the minimal RBAC objects the Kubernetes backend needs (YAML for kubectl apply)",
		Long: "Rbac prints a ServiceAccount-bound ClusterRole (nodes, pods in kube-system to identify\n" +
			"the CNI, namespaces, metrics) and a Role in the run's namespace (pods, exec, services,\n" +
			"secrets, network policies, endpoint slices), each rule commented with why it is needed.",
		Example: "  cnibench k8s rbac --namespace cnibench | kubectl apply -f -",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			y, err := kube.RBACYAML(f.Namespace)
			if err != nil {
				return err
			}
			_, err = s.Out.Write(y)
			return err
		},
	}
	cmd.Flags().StringVar(&f.Namespace, "namespace", cluster.DefaultNamespace, "namespace of the runs (and of the ServiceAccount)")
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
