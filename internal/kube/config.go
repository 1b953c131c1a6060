package kube

import (
	"fmt"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// clientConfig is the kubeconfig loader kubectl uses: the explicit path
// if given, else $KUBECONFIG (a list of files, merged), else
// ~/.kube/config, else the in-cluster service account; context, if not
// "", overrides the current context.
func clientConfig(kubeconfig, context string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// LoadConfig loads the REST config of the cluster to benchmark. kubeconfig
// is an explicit kubeconfig file ("" for $KUBECONFIG, then ~/.kube/config,
// then the in-cluster service account); context, if not "", selects a
// context other than the current one.
func LoadConfig(kubeconfig, context string) (*rest.Config, error) {
	cfg, err := clientConfig(kubeconfig, context).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("load kubeconfig: no cluster configured (pass --kubeconfig, set $KUBECONFIG or write ~/.kube/config): %w", err)
		}
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "cnibench"
	}
	// The defaults (5 QPS, burst 10) make the polls and the clean-up of
	// a run with many objects needlessly slow.
	if cfg.QPS == 0 {
		cfg.QPS = 50
	}
	if cfg.Burst == 0 {
		cfg.Burst = 100
	}
	return cfg, nil
}

// NewClient returns a clientset for cfg.
func NewClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create kubernetes client for %s: %w", cfg.Host, err)
	}
	return cs, nil
}

// NewDynamicClient returns a dynamic client for cfg, for the CNIs' own
// policy objects (CreateClusterObjects, DeleteClusterObjects,
// CleanPolicyObjects).
func NewDynamicClient(cfg *rest.Config) (dynamic.Interface, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client for %s: %w", cfg.Host, err)
	}
	return dyn, nil
}

// NewMetricsClient returns a metrics.k8s.io clientset for cfg (see
// PodMetrics and MetricsAvailable).
func NewMetricsClient(cfg *rest.Config) (metricsclient.Interface, error) {
	mc, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create metrics client for %s: %w", cfg.Host, err)
	}
	return mc, nil
}

// ClusterName returns the name of the cluster of the selected context (the
// current one unless context is not ""), to label results; "" if unknown
// (no kubeconfig, in-cluster config, unknown context).
func ClusterName(kubeconfig, context string) string {
	raw, err := clientConfig(kubeconfig, context).RawConfig()
	if err != nil {
		return ""
	}
	name := context
	if name == "" {
		name = raw.CurrentContext
	}
	if c, ok := raw.Contexts[name]; ok && c != nil {
		return c.Cluster
	}
	return ""
}

// KubeconfigSource names where LoadConfig(kubeconfig, …) reads the
// cluster from, for messages: the explicit file, $KUBECONFIG's files, or
// ~/.kube/config.
func KubeconfigSource(kubeconfig string) string {
	if kubeconfig != "" {
		return kubeconfig
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.Precedence) > 0 {
		return strings.Join(rules.Precedence, ":")
	}
	return clientcmd.RecommendedHomeFile
}
