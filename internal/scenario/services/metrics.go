package services

import (
	"github.com/cnibench/cnibench/internal/cluster"
	"github.com/cnibench/cnibench/pkg/result"
)

// Set-up costs of a lab point, attached to every repeat measured at it,
// and its tear-down.
const (
	SvcSetupSeconds    = "svc_setup_seconds"
	SvcTeardownSeconds = "svc_teardown_seconds"
)

// Evidence metrics of every cell (issue 11 item 4: each mode proves its
// path). The suite flushes the nodes' conntrack tables before each cell,
// so the entries counted after it are the cell's.
const (
	// MetricVIPEntries: conntrack entries in the nodes whose original
	// destination is a service VIP (netfilter saw the VIP: iptables).
	MetricVIPEntries = "svc_conntrack_vip_entries"
	// MetricNATEntries: conntrack entries whose reply does not come from
	// their original destination (some NAT was applied).
	MetricNATEntries = "svc_conntrack_nat_entries"
	// MetricBackends: distinct backends the nodes' conntrack saw reached.
	MetricBackends = "svc_backends_reached"
	// MetricTranslations: the eBPF implementation's translations (socket
	// LB: connects rewritten; TC LB: new flows) during the cell.
	MetricTranslations = "svc_lb_translations"
	// MetricSynRetrans: SYNs retransmitted by every pod of the scenario
	// (a connection whose first SYN was lost waits 1 s; one refused by a
	// TIME_WAIT socket is re-sent within milliseconds).
	MetricSynRetrans = "svc_syn_retransmits"
	// MetricPAWSTimewait: segments the backends refused against a
	// TIME_WAIT socket of the same four-tuple (a SYN whose timestamp is not
	// newer than the old connection's last): what port reuse after NAT
	// costs.
	MetricPAWSTimewait = "svc_paws_timewait_rejects"
)

// Metrics of a cluster point (metrics.go documents them).
const (
	MetricClusterServices              = "svc_cluster_services"
	MetricClusterAPIObjects            = "svc_cluster_api_objects"
	MetricClusterAPIBytes              = "svc_cluster_api_bytes"
	MetricClusterFillersSeconds        = "svc_cluster_fillers_seconds"
	MetricClusterCreatePerSec          = "svc_cluster_create_services_per_sec"
	MetricClusterProgrammingSeconds    = "svc_cluster_programming_seconds"
	MetricClusterWatchResolution       = "svc_cluster_watch_resolution_seconds"
	MetricClusterCNICPU                = "svc_cluster_cni_cpu_millicores"
	MetricClusterCNIMemory             = "svc_cluster_cni_memory_bytes"
	MetricClusterCNIWindow             = "svc_cluster_cni_window_seconds"
	MetricClusterRemovalSeconds        = "svc_cluster_removal_seconds"
	MetricClusterRemovalRefusedSeconds = "svc_cluster_removal_refused_seconds"
	MetricClusterSettleSeconds         = "svc_cluster_settle_seconds"
	MetricClusterSettleCPU             = "svc_cluster_settle_cni_cpu_millicores"
	// Issue 36: the first connection through the Nth service, and the
	// service proxy's own usage (kube-proxy's, where it runs).
	MetricClusterFirstConnect   = "svc_cluster_first_connect_seconds"
	MetricClusterProxyCPU       = "svc_cluster_proxy_cpu_millicores"
	MetricClusterProxyMemory    = "svc_cluster_proxy_memory_bytes"
	MetricClusterProxyWindow    = "svc_cluster_proxy_window_seconds"
	MetricClusterSettleProxyCPU = "svc_cluster_settle_proxy_cpu_millicores"
)

// cniUsageMetrics maps cluster.Access.CNIUsage's metrics to the point's.
// proxyUsageMetrics maps cluster.Access.ProxyUsage's to the point's.
var proxyUsageMetrics = map[string]string{
	cluster.ProxyCPU:    MetricClusterProxyCPU,
	cluster.ProxyMemory: MetricClusterProxyMemory,
	cluster.ProxyWindow: MetricClusterProxyWindow,
}

var cniUsageMetrics = map[string]string{
	"cni_cpu_millicores":       MetricClusterCNICPU,
	"cni_memory_bytes":         MetricClusterCNIMemory,
	"cni_usage_window_seconds": MetricClusterCNIWindow,
}

// metrics documents the scenario's own metrics, those above and a cluster
// point's (cluster.go), registered with the scenario (register.go;
// docs/results.md mirrors them).
var metrics = map[string]result.MetricInfo{
	SvcSetupSeconds:                    {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario: time to load the point's service table (iptables: iptables-nft-restore on both nodes; eBPF: maps filled and programs attached)"},
	SvcTeardownSeconds:                 {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario: time to remove the service table after the point's cells"},
	MetricVIPEntries:                   {Unit: "entries", Better: result.Neutral, Help: "services scenario: conntrack entries in the nodes after the cell whose original destination is a service VIP (netfilter saw the VIP: iptables)"},
	MetricNATEntries:                   {Unit: "entries", Better: result.Neutral, Help: "services scenario: conntrack entries in the nodes after the cell whose reply does not come from their original destination (NAT applied)"},
	MetricBackends:                     {Unit: "backends", Better: result.Neutral, Help: "services scenario: distinct backends the nodes' conntrack saw reached during the cell"},
	MetricTranslations:                 {Unit: "translations", Better: result.Neutral, Help: "services scenario: the eBPF implementation's translations during the cell (socket LB: connects and sends rewritten; TC LB: new flows)"},
	MetricSynRetrans:                   {Unit: "SYNs", Better: result.LowerIsBetter, Help: "services scenario: SYNs retransmitted by the scenario's pods during the cell (each delays its connection: 1 s where the SYN was lost, a few ms where a TIME_WAIT socket's answer made the client re-send it)"},
	MetricPAWSTimewait:                 {Unit: "segments", Better: result.LowerIsBetter, Help: "services scenario: segments the pods refused against a TIME_WAIT socket of the same four-tuple (PAWS): port reuse after NAT"},
	MetricClusterServices:              {Unit: "services", Better: result.Neutral, Help: "services scenario on a cluster: ClusterIP services the point created (N: N−1 fillers and the measured service)"},
	MetricClusterAPIObjects:            {Unit: "objects", Better: result.Neutral, Help: "services scenario on a cluster: API objects the point created (a Service and an EndpointSlice per service)"},
	MetricClusterAPIBytes:              {Unit: "bytes", Better: result.Neutral, Help: "services scenario on a cluster: bytes of the create requests' JSON bodies sent to the API server (the client's default encoding; what etcd stores is larger)"},
	MetricClusterFillersSeconds:        {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario on a cluster: time to create the N−1 filler services (both objects each) through the API, paced by the client's rate limit (--api-qps, 50 requests/s by default)"},
	MetricClusterCreatePerSec:          {Unit: "services/s", Better: result.HigherIsBetter, Help: "services scenario on a cluster: filler services created per second (svc_cluster_fillers_seconds ÷ N−1; at most half the client's requests/s once its burst is spent)"},
	MetricClusterProgrammingSeconds:    {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario on a cluster: time from the measured (Nth) service's EndpointSlice create until its VIP answered for good from the client pod: the API call, the control plane's propagation and the datapath's programming (kube-proxy or the CNI), with any backlog of the fillers'"},
	MetricClusterWatchResolution:       {Unit: "s", Better: result.Neutral, Help: "services scenario on a cluster: time between the probes that located svc_cluster_programming_seconds and svc_cluster_removal_refused_seconds (their resolution)"},
	MetricClusterCNICPU:                {Unit: "millicores", Better: result.LowerIsBetter, Help: "services scenario on a cluster: CPU of the CNI's pods on the run's two nodes (cgroups) over the point's creation, in thousandths of a core; kube-proxy is not included (svc_cluster_proxy_cpu_millicores)"},
	MetricClusterCNIMemory:             {Unit: "bytes", Better: result.LowerIsBetter, Help: "services scenario on a cluster: working set of the CNI's pods on the run's two nodes after the point's creation"},
	MetricClusterCNIWindow:             {Unit: "s", Better: result.Neutral, Help: "services scenario on a cluster: length of the window svc_cluster_cni_cpu_millicores averages over (the whole creation)"},
	MetricClusterRemovalSeconds:        {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario on a cluster: time from the first delete call until none of the point's Services and EndpointSlices was left in the API"},
	MetricClusterRemovalRefusedSeconds: {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario on a cluster: time from the first delete call (the EndpointSlices go first) until the measured VIP stopped answering for good from the client pod"},
	MetricClusterSettleSeconds:         {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario on a cluster: time from the end of the removal until the CNI's pods and kube-proxy on the run's two nodes used less than the bound together (default 250 mCPU) over a 2 s window, at most 90 s: the datapath's own tear-down, which the next point would otherwise measure"},
	MetricClusterSettleCPU:             {Unit: "millicores", Better: result.LowerIsBetter, Help: "services scenario on a cluster: CPU of the CNI's pods over the last window of svc_cluster_settle_seconds (below the bound when it settled)"},
	MetricClusterFirstConnect:          {Unit: "s", Better: result.LowerIsBetter, Help: "services scenario on a cluster: connect time (SYN to established) of the first connection to the measured (Nth) service's VIP that answered once it was programmed (the probe that starts svc_cluster_programming_seconds' lasting answer): the first packet's path through the new rules or maps, not tcp_crr's steady state"},
	MetricClusterProxyCPU:              {Unit: "millicores", Better: result.LowerIsBetter, Help: "services scenario on a cluster: CPU of kube-proxy on the run's two nodes (its pods' cgroups, or its own cgroup when it runs outside pods) over the point's creation, in thousandths of a core; absent where no kube-proxy runs (the CNI's replacement is in svc_cluster_cni_cpu_millicores)"},
	MetricClusterProxyMemory:           {Unit: "bytes", Better: result.LowerIsBetter, Help: "services scenario on a cluster: working set of kube-proxy on the run's two nodes after the point's creation"},
	MetricClusterProxyWindow:           {Unit: "s", Better: result.Neutral, Help: "services scenario on a cluster: length of the window svc_cluster_proxy_cpu_millicores averages over (the whole creation)"},
	MetricClusterSettleProxyCPU:        {Unit: "millicores", Better: result.LowerIsBetter, Help: "services scenario on a cluster: CPU of kube-proxy on the run's two nodes over the last window of svc_cluster_settle_seconds"},
}
