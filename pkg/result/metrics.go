package result

import "strings"

// Better says which direction of a metric is an improvement.
type Better int

const (
	HigherIsBetter Better = iota
	LowerIsBetter
	Neutral
)

// MetricInfo documents one metric: its unit, direction and meaning.
type MetricInfo struct {
	Unit   string
	Better Better
	Help   string
}

// Metric names. The unit is part of the name.
const (
	ThroughputBitsPerSec    = "throughput_bits_per_sec"
	ThroughputRxBitsPerSec  = "throughput_rx_bits_per_sec"
	ThroughputTxBitsPerSec  = "throughput_tx_bits_per_sec"
	TransPerSec             = "trans_per_sec"
	LatencyUsMean           = "latency_us_mean"
	LatencyUsP50            = "latency_us_p50"
	LatencyUsP90            = "latency_us_p90"
	LatencyUsP99            = "latency_us_p99"
	LatencyUsP999           = "latency_us_p99.9"
	LatencyUsMax            = "latency_us_max"
	ConnectUsP50            = "connect_us_p50"
	ConnectUsP90            = "connect_us_p90"
	ConnectUsP99            = "connect_us_p99"
	ConnectUsMax            = "connect_us_max"
	LossPct                 = "loss_pct"
	DatagramsSent           = "datagrams_sent"
	DatagramsReceived       = "datagrams_received"
	DatagramsLost           = "datagrams_lost"
	DatagramsDuplicated     = "datagrams_duplicated"
	DatagramsReordered      = "datagrams_reordered"
	TCPRetransmits          = "tcp_retransmits"
	Errors                  = "errors"
	ClientCPUPct            = "client_cpu_pct"
	ServerCPUPct            = "server_cpu_pct"
	HostCPUPct              = "host_cpu_pct"
	HostCPUUserPct          = "host_cpu_user_pct"
	HostCPUSysPct           = "host_cpu_sys_pct"
	HostCPUSoftirqPct       = "host_cpu_softirq_pct"
	HostCPUIrqPct           = "host_cpu_irq_pct"
	RemoteHostCPUPct        = "remote_host_cpu_pct"
	RemoteHostCPUSysPct     = "remote_host_cpu_sys_pct"
	RemoteHostCPUSoftirqPct = "remote_host_cpu_softirq_pct"
	ForeignCPUPct           = "foreign_cpu_pct"
	StealPct                = "steal_pct"
	RemoteForeignCPUPct     = "remote_foreign_cpu_pct"
	RemoteStealPct          = "remote_steal_pct"
	RunCPUPct               = "run_cpu_pct"
	CPUPctPer100Gbit        = "cpu_pct_per_100gbit"
	CPUUsPerTrans           = "cpu_us_per_trans"
	ClientRSSBytes          = "client_max_rss_bytes"
	ConntrackEntries        = "conntrack_entries"
	EchoRequestsSent        = "echo_requests_sent"
	EchoRequestsLost        = "echo_requests_lost"
	EchoRepliesLate         = "echo_replies_late"
	EchoRepliesMismatched   = "echo_replies_mismatched"
	DatagramsReceivedPerSec = "datagrams_received_per_sec"

	// --pairs N on a cluster: N clients at once, one result.
	Pairs           = "pairs"
	PairSpreadPct   = "pair_spread_pct"
	PairStartSkewMs = "pair_start_skew_ms"
)

// TCP_INFO figures of the client's flows (tcp_stream, tcp_rr and
// tcp_rr_loaded's rr flows) at the window's close, and its counters'
// deltas over the window; tcp_rr_loaded's load.
const (
	TCPRetransmitPct          = "tcp_retransmit_pct"
	TCPSRTTUsMedian           = "tcp_srtt_us_median"
	TCPSRTTUsMax              = "tcp_srtt_us_max"
	TCPRTTVarUsMedian         = "tcp_rttvar_us_median"
	TCPMinRTTUs               = "tcp_min_rtt_us"
	TCPSndCwndSegmentsMedian  = "tcp_snd_cwnd_segments_median"
	TCPDeliveryRateBitsPerSec = "tcp_delivery_rate_bits_per_sec"
	LoadThroughputBitsPerSec  = "load_throughput_bits_per_sec"
	LoadTCPRetransmits        = "load_tcp_retransmits"
	LoadTCPSRTTUsMedian       = "load_tcp_srtt_us_median"
)

// Metrics documents the engine's metrics and the backends' (the lab's path
// evidence, a cluster's --pairs); a scenario's own are registered by the
// scenario (RegisterMetrics, registry.go). docs/results.md mirrors them
// all.
var Metrics = map[string]MetricInfo{
	Pairs:                              {"pairs", Neutral, "kubernetes --pairs N: client/server pairs measured at once in the cell (rates and counts are their sum; latencies the worst pair's)"},
	PairSpreadPct:                      {"%", LowerIsBetter, "kubernetes --pairs N: (max − min) ÷ mean of the pairs' headline metric (throughput for streams, trans/s otherwise), in %"},
	PairStartSkewMs:                    {"ms", LowerIsBetter, "kubernetes --pairs N: time between the first and the last pair's measured window start (the pairs overlap that much less)"},
	"pair_min_" + ThroughputBitsPerSec: {"bit/s", HigherIsBetter, "kubernetes --pairs N: the slowest pair's throughput"},
	"pair_max_" + ThroughputBitsPerSec: {"bit/s", HigherIsBetter, "kubernetes --pairs N: the fastest pair's throughput"},
	"pair_min_" + TransPerSec:          {"trans/s", HigherIsBetter, "kubernetes --pairs N: the slowest pair's transactions per second"},
	"pair_max_" + TransPerSec:          {"trans/s", HigherIsBetter, "kubernetes --pairs N: the fastest pair's transactions per second"},
	ThroughputBitsPerSec:               {"bit/s", HigherIsBetter, "the headline throughput, payload bits per second (goodput, no headers): tcp_stream and http, what the senders wrote in the window; udp_stream, what the receiver got (throughput_rx_bits_per_sec), the sent rate being throughput_tx_bits_per_sec"},
	ThroughputRxBitsPerSec:             {"bit/s", HigherIsBetter, "payload bits per second read by the receivers during the measured window (udp_stream: unique datagrams of the measured phase)"},
	ThroughputTxBitsPerSec:             {"bit/s", Neutral, "payload bits per second written by the senders during the measured window (stream tests; for udp_stream the offered load, of which loss_pct did not arrive)"},
	TransPerSec:                        {"trans/s", HigherIsBetter, "transactions per second: request/response pairs (rr), connect+request+response+close (crr), HTTP requests (http), ICMP echo request/reply pairs (icmp_echo), messages or datagrams sent (stream tests)"},
	LatencyUsMean:                      {"µs", LowerIsBetter, "mean transaction latency"},
	LatencyUsP50:                       {"µs", LowerIsBetter, "median transaction latency"},
	LatencyUsP90:                       {"µs", LowerIsBetter, "90th percentile transaction latency"},
	LatencyUsP99:                       {"µs", LowerIsBetter, "99th percentile transaction latency"},
	LatencyUsP999:                      {"µs", LowerIsBetter, "99.9th percentile transaction latency"},
	LatencyUsMax:                       {"µs", LowerIsBetter, "largest transaction latency"},
	ConnectUsP50:                       {"µs", LowerIsBetter, "median time for connect() to complete (crr, http without keep-alive)"},
	ConnectUsP90:                       {"µs", LowerIsBetter, "90th percentile connect time"},
	ConnectUsP99:                       {"µs", LowerIsBetter, "99th percentile connect time"},
	ConnectUsMax:                       {"µs", LowerIsBetter, "largest connect time"},
	LossPct:                            {"%", LowerIsBetter, "UDP datagrams sent in the window but not received, in percent of those sent (exact: sequence numbers and a phase byte in every datagram)"},
	DatagramsSent:                      {"datagrams", Neutral, "UDP datagrams sent in the measured window"},
	DatagramsReceived:                  {"datagrams", Neutral, "distinct UDP datagrams of the measured window that the receiver got (duplicates not counted)"},
	DatagramsLost:                      {"datagrams", LowerIsBetter, "UDP datagrams sent in the measured window that never arrived: datagrams_sent − datagrams_received, counted after the receiver's queues drained"},
	DatagramsDuplicated:                {"datagrams", LowerIsBetter, "UDP datagrams of the measured window that arrived more than once (extra copies)"},
	DatagramsReordered:                 {"datagrams", LowerIsBetter, "UDP datagrams of the measured window that arrived after a later one of their flow (out of order, as iperf3 counts)"},
	TCPRetransmits:                     {"segments", LowerIsBetter, "TCP segments the client's flows retransmitted during the window (TCP_INFO total_retrans, delta summed over the flows; tcp_stream, tcp_rr, tcp_rr_loaded's rr flows)"},
	TCPRetransmitPct:                   {"%", LowerIsBetter, "tcp_retransmits in percent of the segments the client's flows sent during the window (TCP_INFO segs_out delta, pure ACKs included)"},
	TCPSRTTUsMedian:                    {"µs", LowerIsBetter, "smoothed RTT the kernel keeps for the client's flows (TCP_INFO rtt) at the window's close, median over the flows"},
	TCPSRTTUsMax:                       {"µs", LowerIsBetter, "smoothed RTT (TCP_INFO rtt) of the client's flow with the largest one at the window's close"},
	TCPRTTVarUsMedian:                  {"µs", LowerIsBetter, "RTT variance the kernel keeps for the client's flows (TCP_INFO rttvar, the mean deviation) at the window's close, median over the flows"},
	TCPMinRTTUs:                        {"µs", LowerIsBetter, "smallest RTT any client flow saw over its life (TCP_INFO min_rtt at the window's close, the smallest over the flows): the path's RTT without queueing"},
	TCPSndCwndSegmentsMedian:           {"segments", Neutral, "congestion window of the client's flows (TCP_INFO snd_cwnd) at the window's close, median over the flows"},
	TCPDeliveryRateBitsPerSec:          {"bit/s", Neutral, "the kernel's estimate of the client's flows' recent delivery rate (TCP_INFO delivery_rate, bits/s) at the window's close, summed over the flows; application-limited for rr"},
	LoadThroughputBitsPerSec:           {"bit/s", Neutral, "tcp_rr_loaded: payload bits per second the load's tcp_stream flows wrote during the measured window (how loaded the path was)"},
	LoadTCPRetransmits:                 {"segments", LowerIsBetter, "tcp_rr_loaded: TCP segments the load's tcp_stream flows retransmitted during the window (TCP_INFO total_retrans delta)"},
	LoadTCPSRTTUsMedian:                {"µs", LowerIsBetter, "tcp_rr_loaded: smoothed RTT (TCP_INFO rtt) of the load's tcp_stream flows at the window's close, median over the flows (the queue the load builds)"},
	Errors:                             {"errors", LowerIsBetter, "failed transactions (connect or I/O errors, bad HTTP status)"},
	ClientCPUPct:                       {"% of a core", LowerIsBetter, "client process user+sys CPU time over the window (getrusage), 100 = one core"},
	ServerCPUPct:                       {"% of a core", LowerIsBetter, "server process user+sys CPU time over the window (getrusage), 100 = one core"},
	HostCPUPct:                         {"% of a core", LowerIsBetter, "host-wide busy CPU over the window from /proc/stat (user+nice+system+irq+softirq+steal), 100 = one core"},
	HostCPUUserPct:                     {"% of a core", LowerIsBetter, "host-wide user+nice CPU over the window"},
	HostCPUSysPct:                      {"% of a core", LowerIsBetter, "host-wide system CPU over the window"},
	HostCPUSoftirqPct:                  {"% of a core", LowerIsBetter, "host-wide softirq CPU over the window (most of the network stack)"},
	HostCPUIrqPct:                      {"% of a core", LowerIsBetter, "host-wide hard-irq CPU over the window"},
	RemoteHostCPUPct:                   {"% of a core", LowerIsBetter, "the server host's busy CPU over its window from its /proc/stat; absent when client and server share one host (host_cpu_pct then covers both)"},
	RemoteHostCPUSysPct:                {"% of a core", LowerIsBetter, "the server host's system CPU over its window (absent on a shared host)"},
	RemoteHostCPUSoftirqPct:            {"% of a core", LowerIsBetter, "the server host's softirq CPU over its window (absent on a shared host)"},
	ForeignCPUPct:                      {"% of a core", LowerIsBetter, "other programs' CPU on the client's host over the window: their processes' CPU counted one by one where the client sees the host's processes, else /proc/stat user+nice+system minus the run's own processes' (their cgroups'); what the run competed with (docs/interference.md)"},
	StealPct:                           {"% of a core", LowerIsBetter, "steal time on the client's host over the window: CPU the hypervisor gave to other guests"},
	RemoteForeignCPUPct:                {"% of a core", LowerIsBetter, "other programs' CPU on the server's host over its window (absent on a shared host: foreign_cpu_pct covers it)"},
	RemoteStealPct:                     {"% of a core", LowerIsBetter, "steal time on the server's host over its window (absent on a shared host)"},
	RunCPUPct:                          {"% of a core", LowerIsBetter, "the run's CPU on the client's host: host_cpu_pct minus other programs' (foreign_cpu_pct) and steal — its processes, kernel threads and the datapath's softirq work"},
	CPUPctPer100Gbit:                   {"% of a core", LowerIsBetter, "CPU needed for 100 Gbit/s: busy CPU of the client's and (if another) the server's host, less other programs' CPU and steal, × 100 Gbit/s ÷ throughput_bits_per_sec (for udp_stream, bits received) (seed 000's normalisation)"},
	CPUUsPerTrans:                      {"µs", LowerIsBetter, "CPU time spent per transaction: busy CPU time of the client's and (if another) the server's host, less other programs' CPU and steal, ÷ transactions"},
	ClientRSSBytes:                     {"bytes", LowerIsBetter, "client process peak resident set size"},
	"client_ip_frag_creates":           {"fragments", LowerIsBetter, "IP fragments created in the client's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"client_ip_frag_oks":               {"datagrams", LowerIsBetter, "IP datagrams fragmented in the client's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"client_ip_reasm_reqds":            {"fragments", LowerIsBetter, "IP fragments received that needed reassembly in the client's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"client_ip_reasm_oks":              {"datagrams", LowerIsBetter, "IP datagrams reassembled in the client's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"client_ip_reasm_fails":            {"failures", LowerIsBetter, "IP reassembly failures in the client's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"server_ip_frag_creates":           {"fragments", LowerIsBetter, "IP fragments created in the server's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"server_ip_frag_oks":               {"datagrams", LowerIsBetter, "IP datagrams fragmented in the server's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"server_ip_reasm_reqds":            {"fragments", LowerIsBetter, "IP fragments received that needed reassembly in the server's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"server_ip_reasm_oks":              {"datagrams", LowerIsBetter, "IP datagrams reassembled in the server's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	"server_ip_reasm_fails":            {"failures", LowerIsBetter, "IP reassembly failures in the server's network namespace during the window (/proc/net/snmp Ip: / snmp6; UDP tests)"},
	EchoRequestsSent:                   {"requests", Neutral, "ICMP echo requests sent in the measured window (icmp_echo)"},
	EchoRequestsLost:                   {"requests", LowerIsBetter, "ICMP echo requests that got no reply within --timeout, counted in the window where the timeout expired (icmp_echo)"},
	EchoRepliesLate:                    {"replies", LowerIsBetter, "ICMP echo replies that came after their request was counted lost, or duplicates (icmp_echo)"},
	EchoRepliesMismatched:              {"messages", LowerIsBetter, "messages read from the ICMP sockets that were no intact echo reply of this flow and session: wrong type, size, cookie, sequence or payload (icmp_echo)"},
	"k8s_pods_syn_retransmits":         {"SYNs", LowerIsBetter, "kubernetes backend: SYNs retransmitted in the run's pods' namespaces during the cell (each delays its connection: 1 s where the SYN was lost, a few ms where a TIME_WAIT socket's answer made the client re-send it)"},
	"k8s_pods_paws_timewait_rejects":   {"segments", LowerIsBetter, "kubernetes backend: segments the run's pods refused against a TIME_WAIT socket of the same four-tuple (PAWS)"},
	"k8s_nodes_syn_retransmits":        {"SYNs", LowerIsBetter, "kubernetes backend: SYNs retransmitted in the two nodes' namespaces during the cell (includes every workload of the nodes)"},
	"k8s_nodes_paws_timewait_rejects":  {"segments", LowerIsBetter, "kubernetes backend: segments the two nodes refused against a TIME_WAIT socket of the same four-tuple (PAWS; every workload of the nodes)"},
	DatagramsReceivedPerSec:            {"datagrams/s", HigherIsBetter, "packet rate: distinct UDP datagrams the receiver got per second of the measured window (datagrams_received ÷ window; udp_stream in scenarios)"},
	ConntrackEntries:                   {"entries", Neutral, "connection-tracking entries in the two node namespaces right after the repeat (shows whether a datapath engages conntrack)"},
	"time_wait_at_start":               {"sockets", Neutral, "TCP sockets in TIME_WAIT in the datapath's namespaces when the repeat started (the suite flushes conntrack before every cell but cannot remove TIME_WAIT sockets, so it records them)"},
	"bpf_redirect_peer_packets":        {"packets", Neutral, "packets the eBPF datapath redirected straight into a pod (bpf_redirect_peer) during the repeat"},
	"cpu_profile_samples":              {"samples", Neutral, "CPU profile (--cpu-profile): samples taken on every CPU during the window (999 per second per CPU by default, idle included); the cpu_share_<family> and cpu_incl_<family> shares are of these (docs/profiles.md)"},
	"cpu_profile_lost":                 {"samples", LowerIsBetter, "CPU profile: samples the kernel dropped because the ring buffers were full (0 expected; lower --cpu-profile-hz otherwise)"},
	"cpu_profile_reader_cpu_sec":       {"s", LowerIsBetter, "CPU profile: CPU time of the sampler's reader thread in the client process during the window (draining the rings, parsing, /proc reads): the part of sampling's cost charged to the client"},
	"bpf_redirect_host_packets":        {"packets", Neutral, "packets ebpf-host-routing-redirect sent out of a pod's host-side veth (bpf_redirect, Calico-style: the pod receives them through the per-CPU backlog) during the repeat"},
	"bpf_redirect_neigh_packets":       {"packets", Neutral, "packets the eBPF datapath redirected out of a node (bpf_redirect_neigh) during the repeat"},
	"bpf_pass_packets":                 {"packets", Neutral, "packets the eBPF datapath handed to the node's stack during the repeat"},
	"bpf_drop_packets":                 {"packets", Neutral, "packets the eBPF datapath dropped because a redirect helper refused them, during the repeat (path proof: should be 0)"},
	"bpf_ct_new_packets":               {"packets", Neutral, "packets that created an entry in the eBPF datapath's connection-tracking map during the repeat (new connections, per node)"},
	"bpf_ct_established_packets":       {"packets", Neutral, "packets found in the eBPF datapath's connection-tracking map in the original direction during the repeat"},
	"bpf_ct_reply_packets":             {"packets", Neutral, "packets found in the eBPF datapath's connection-tracking map in the reply direction during the repeat"},
	"bpf_policy_denied_packets":        {"packets", Neutral, "packets the eBPF datapath's policy map dropped during the repeat (path proof: should be 0)"},
	"conntrack_new_packets":            {"packets", Neutral, "packets the nodes forwarded in conntrack state new (nft forward-chain counter) during the repeat: > 0 proves conntrack engaged, 0 expected on NOTRACK and eBPF datapaths"},
	"conntrack_drops":                  {"packets", LowerIsBetter, "conntrack drop + early_drop + insert_failed in the nodes during the repeat (/proc/net/stat/nf_conntrack; table full or clashes)"},
	"conntrack_invalid_packets":        {"packets", Neutral, "packets conntrack found invalid in the nodes during the repeat (/proc/net/stat/nf_conntrack)"},
	"nft_forward_packets":              {"packets", Neutral, "packets the nodes' nft forward chain accepted or dropped during the repeat (0 expected on eBPF datapaths, whose redirect bypasses it)"},
	"vxlan_tx_packets":                 {"packets", Neutral, "packets the nodes' VXLAN devices sent during the repeat (path proof of the vxlan datapaths on cross-node paths)"},
	"wire_tx_packets":                  {"packets", Neutral, "packets the two nodes sent on the node-to-node wire during the repeat (with wire_tx_bytes: frame size on the wire, at most MTU + 14 on the NIC-like wire)"},
	"wire_tx_bytes":                    {"bytes", Neutral, "bytes (Ethernet frames) the two nodes sent on the node-to-node wire during the repeat"},
}

// Info returns the metric's documentation (Known: the engine's or a
// registered one), with a generic entry for unknown names (guessing the
// unit from the name).
func Info(name string) MetricInfo {
	if m, ok := Known(name); ok {
		return m
	}
	if m, ok := profileMetricInfo(name); ok {
		return m
	}
	switch {
	case strings.Contains(name, "_us"):
		return MetricInfo{"µs", LowerIsBetter, name}
	case strings.Contains(name, "_pct"):
		return MetricInfo{"%", LowerIsBetter, name}
	case strings.HasSuffix(name, "_per_sec"):
		return MetricInfo{"/s", HigherIsBetter, name}
	case strings.HasSuffix(name, "_sec"), strings.HasSuffix(name, "_seconds"):
		return MetricInfo{"s", LowerIsBetter, name}
	case strings.HasSuffix(name, "_bytes"):
		return MetricInfo{"bytes", LowerIsBetter, name}
	}
	return MetricInfo{"", Neutral, name}
}
