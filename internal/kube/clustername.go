package kube

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterNameTimeout bounds ClusterNameOr's read of the kube-system
// namespace.
const ClusterNameTimeout = 10 * time.Second

// ClusterNameOr names the cluster for the results: name (the kubeconfig
// context's cluster, ClusterName) unless "", else the API server's host
// in apiHost (a rest.Config.Host, "https://10.0.0.1:6443"), unless that
// is the in-cluster service address every cluster shares, else
// "uid-" and the first 8 characters of the kube-system namespace's UID
// (stable for the cluster's life), else "unknown". It never returns "".
// The second result says where the name comes from.
func ClusterNameOr(ctx context.Context, cs kubernetes.Interface, name, apiHost string) (string, string) {
	if name != "" {
		return name, "the kubeconfig context's cluster"
	}
	if h := apiServerHost(apiHost); h != "" && h != os.Getenv("KUBERNETES_SERVICE_HOST") {
		return h, "the API server's host (the kubeconfig context names no cluster)"
	}
	ctx, cancel := context.WithTimeout(ctx, ClusterNameTimeout)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err == nil && len(ns.UID) >= 8 {
		return "uid-" + string(ns.UID)[:8], "the kube-system namespace's UID"
	}
	why := "its UID is too short"
	if err != nil {
		why = err.Error()
	}
	return "unknown", "no kubeconfig cluster name, no API server host, and namespace kube-system not read: " + why
}

// apiServerHost is the host of a rest.Config.Host ("https://h:6443",
// "h:6443" or "h"), without the port ("" if none).
func apiServerHost(host string) string {
	if host == "" {
		return ""
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return ""
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}
