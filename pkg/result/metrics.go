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
	ThroughputBitsPerSec   = "throughput_bits_per_sec"
	ThroughputRxBitsPerSec = "throughput_rx_bits_per_sec"
	TransPerSec            = "trans_per_sec"
	LatencyUsMean          = "latency_us_mean"
	LatencyUsP50           = "latency_us_p50"
	LatencyUsP90           = "latency_us_p90"
	LatencyUsP99           = "latency_us_p99"
	LatencyUsP999          = "latency_us_p99.9"
	LatencyUsMax           = "latency_us_max"
	ConnectUsP50           = "connect_us_p50"
	ConnectUsP90           = "connect_us_p90"
	ConnectUsP99           = "connect_us_p99"
	ConnectUsMax           = "connect_us_max"
	LossPct                = "loss_pct"
	DatagramsSent          = "datagrams_sent"
	DatagramsReceived      = "datagrams_received"
	TCPRetransmits         = "tcp_retransmits"
	Errors                 = "errors"
	ClientCPUPct           = "client_cpu_pct"
	ServerCPUPct           = "server_cpu_pct"
	HostCPUPct             = "host_cpu_pct"
	HostCPUUserPct         = "host_cpu_user_pct"
	HostCPUSysPct          = "host_cpu_sys_pct"
	HostCPUSoftirqPct      = "host_cpu_softirq_pct"
	HostCPUIrqPct          = "host_cpu_irq_pct"
	CPUPctPer100Gbit       = "cpu_pct_per_100gbit"
	CPUUsPerTrans          = "cpu_us_per_trans"
	ClientRSSBytes         = "client_max_rss_bytes"
	ConntrackEntries       = "conntrack_entries"
)

// Metrics documents every metric cnibench reports. docs/results.md mirrors it.
var Metrics = map[string]MetricInfo{
	ThroughputBitsPerSec:         {"bit/s", HigherIsBetter, "payload bits per second written by the senders during the measured window (goodput, no headers)"},
	ThroughputRxBitsPerSec:       {"bit/s", HigherIsBetter, "payload bits per second read by the receivers during the measured window"},
	TransPerSec:                  {"trans/s", HigherIsBetter, "transactions per second: request/response pairs (rr), connect+request+response+close (crr), HTTP requests (http), messages or datagrams sent (stream tests)"},
	LatencyUsMean:                {"µs", LowerIsBetter, "mean transaction latency"},
	LatencyUsP50:                 {"µs", LowerIsBetter, "median transaction latency"},
	LatencyUsP90:                 {"µs", LowerIsBetter, "90th percentile transaction latency"},
	LatencyUsP99:                 {"µs", LowerIsBetter, "99th percentile transaction latency"},
	LatencyUsP999:                {"µs", LowerIsBetter, "99.9th percentile transaction latency"},
	LatencyUsMax:                 {"µs", LowerIsBetter, "largest transaction latency"},
	ConnectUsP50:                 {"µs", LowerIsBetter, "median time for connect() to complete (crr, http without keep-alive)"},
	ConnectUsP90:                 {"µs", LowerIsBetter, "90th percentile connect time"},
	ConnectUsP99:                 {"µs", LowerIsBetter, "99th percentile connect time"},
	ConnectUsMax:                 {"µs", LowerIsBetter, "largest connect time"},
	LossPct:                      {"%", LowerIsBetter, "UDP datagrams sent in the window but not received, in percent of those sent"},
	DatagramsSent:                {"datagrams", Neutral, "UDP datagrams sent in the measured window"},
	DatagramsReceived:            {"datagrams", Neutral, "UDP datagrams of the measured window that the receiver got"},
	TCPRetransmits:               {"segments", LowerIsBetter, "TCP segments retransmitted by the senders during the window (TCP_INFO total_retrans)"},
	Errors:                       {"errors", LowerIsBetter, "failed transactions (connect or I/O errors, bad HTTP status)"},
	ClientCPUPct:                 {"% of a core", LowerIsBetter, "client process user+sys CPU time over the window (getrusage), 100 = one core"},
	ServerCPUPct:                 {"% of a core", LowerIsBetter, "server process user+sys CPU time over the window (getrusage), 100 = one core"},
	HostCPUPct:                   {"% of a core", LowerIsBetter, "host-wide busy CPU over the window from /proc/stat (user+nice+system+irq+softirq+steal), 100 = one core"},
	HostCPUUserPct:               {"% of a core", LowerIsBetter, "host-wide user+nice CPU over the window"},
	HostCPUSysPct:                {"% of a core", LowerIsBetter, "host-wide system CPU over the window"},
	HostCPUSoftirqPct:            {"% of a core", LowerIsBetter, "host-wide softirq CPU over the window (most of the network stack)"},
	HostCPUIrqPct:                {"% of a core", LowerIsBetter, "host-wide hard-irq CPU over the window"},
	CPUPctPer100Gbit:             {"% of a core", LowerIsBetter, "host CPU needed for 100 Gbit/s: host_cpu_pct × 100 Gbit/s ÷ throughput (seed 000's normalisation)"},
	CPUUsPerTrans:                {"µs", LowerIsBetter, "host CPU time spent per transaction: host busy CPU time ÷ transactions"},
	ClientRSSBytes:               {"bytes", LowerIsBetter, "client process peak resident set size"},
	ConntrackEntries:             {"entries", Neutral, "connection-tracking entries in the two node namespaces right after the repeat (shows whether a datapath engages conntrack)"},
	"bpf_redirect_peer_packets":  {"packets", Neutral, "packets the eBPF datapath redirected straight into a pod (bpf_redirect_peer) during the repeat"},
	"bpf_redirect_neigh_packets": {"packets", Neutral, "packets the eBPF datapath redirected out of a node (bpf_redirect_neigh) during the repeat"},
	"bpf_pass_packets":           {"packets", Neutral, "packets the eBPF datapath handed to the node's stack during the repeat"},
}

// Info returns the metric's documentation, with a generic entry for
// unknown names (guessing the unit from the name).
func Info(name string) MetricInfo {
	if m, ok := Metrics[name]; ok {
		return m
	}
	switch {
	case strings.Contains(name, "_us"):
		return MetricInfo{"µs", LowerIsBetter, name}
	case strings.Contains(name, "_pct"):
		return MetricInfo{"%", LowerIsBetter, name}
	case strings.HasSuffix(name, "_per_sec"):
		return MetricInfo{"/s", HigherIsBetter, name}
	case strings.HasSuffix(name, "_sec"):
		return MetricInfo{"s", LowerIsBetter, name}
	case strings.HasSuffix(name, "_bytes"):
		return MetricInfo{"bytes", LowerIsBetter, name}
	}
	return MetricInfo{"", Neutral, name}
}
