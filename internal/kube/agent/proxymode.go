package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// SchemaProxyMode is the schema of `cnibench k8s agent proxy-mode`.
const SchemaProxyMode = "cnibench/agent/proxy-mode/v1"

// KubeProxyMetricsURL is where kube-proxy answers its mode on a node
// (its metrics address, 127.0.0.1:10249 by default): a host-network pod
// reaches it whatever runs kube-proxy (a DaemonSet, a systemd unit, an
// embedding distribution).
const KubeProxyMetricsURL = "http://127.0.0.1:10249/proxyMode"

// ProxyMode is what a node's kube-proxy says of its mode.
type ProxyMode struct {
	Schema string `json:"schema"`
	// Mode is kube-proxy's answer ("iptables", "ipvs", "nftables"); ""
	// when nothing answered.
	Mode string `json:"mode,omitempty"`
	// Error is why nothing answered (no kube-proxy on the node, or its
	// metrics elsewhere).
	Error string `json:"error,omitempty"`
}

// ReadProxyMode asks url (KubeProxyMetricsURL) for kube-proxy's mode,
// bounded by timeout. It never fails: what went wrong is in Error.
func ReadProxyMode(ctx context.Context, url string, timeout time.Duration) ProxyMode {
	out := ProxyMode{Schema: SchemaProxyMode}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	switch {
	case err != nil:
		out.Error = err.Error()
	case resp.StatusCode != http.StatusOK:
		out.Error = fmt.Sprintf("%s answered %s", url, resp.Status)
	default:
		mode := strings.TrimSpace(string(b))
		if mode == "" || strings.ContainsAny(mode, " \n<") {
			out.Error = fmt.Sprintf("%s answered %.40q, not a proxy mode", url, mode)
		} else {
			out.Mode = mode
		}
	}
	return out
}
