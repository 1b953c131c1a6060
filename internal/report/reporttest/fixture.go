// Package reporttest builds deterministic synthetic cnibench/results/v1
// sets for the report and compare tests. The numbers are plausible for a
// 100 Gbit/s testbed but invented; they are generated from a fixed seed so
// that testdata files and golden outputs are stable.
package reporttest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cnibench/cnibench/pkg/result"
)

// Options vary the generated set.
type Options struct {
	// Seed of the pseudo-random noise.
	Seed uint64
	// Factor multiplies the primary metric of a datapath (1 = unchanged),
	// to make a "new" set that differs from the "old" one.
	Factor map[string]float64
	// Start is the set's start time.
	Start time.Time
	// Evidence adds the datapath evidence the lab records (conntrack
	// entries, BPF and forwarding counters, VXLAN counters, path MTU),
	// derived from each repeat's own figures without extra randomness.
	Evidence bool
}

// datapath performance relative to the node-to-node baseline: throughput
// factor, transaction-rate factor and CPU cost factor.
type dpModel struct {
	name, desc, packetPath, skipped string
	tput, trans, cpu                float64
}

var datapaths = []dpModel{
	{"baseline", "node-to-node networking, no containers: the reference", "app → TCP/IP → eth0 → wire", "", 1, 1, 1},
	{"veth-routing", "veth pair per pod, routed by the host (iptables, conntrack)", "pod TCP/IP → veth → host netfilter/conntrack → route → eth0", "", 0.82, 0.78, 1.32},
	{"veth-routing-notrack", "veth routing with conntrack disabled (NOTRACK)", "pod TCP/IP → veth → host route (no conntrack) → eth0", "", 0.88, 0.85, 1.2},
	{"bridge", "veth pairs on a Linux bridge", "pod TCP/IP → veth → bridge → host netfilter → eth0", "", 0.79, 0.74, 1.38},
	{"vxlan", "VXLAN overlay between nodes", "pod TCP/IP → veth → bridge → vxlan encap → eth0", "", 0.58, 0.69, 1.75},
	{"ebpf-host-routing", "tc eBPF redirect between veth and eth0 (bpf_redirect_peer / bpf_redirect_neigh)", "pod TCP/IP → veth → tc eBPF redirect → eth0", "", 0.99, 0.95, 1.04},
	{"netkit", "netkit device pair with BPF programs", "pod TCP/IP → netkit (BPF) → eth0", "kernel 6.1.0-28-amd64 has no netkit (needs Linux ≥ 6.7)", 1, 1, 1},
}

var tests = []string{"tcp_stream", "tcp_rr", "tcp_crr", "udp_stream", "http"}

// Set returns a synthetic results set: six measured datapaths (netkit is
// skipped), cross-node and same-node paths (node-to-node for the baseline),
// five tests, 1 and 32 flows, five repeats each, an MTU sweep, an
// egress-filter scenario with rule counts from 10 to 1000000, a noisy cell
// with an outlier, a failed repeat and a skipped cell.
func Set(o Options) *result.Set {
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x636e6962656e6368))
	s := &result.Set{
		Schema: result.SchemaResults,
		Tool:   result.Tool{Name: "cnibench", Version: "v0.1.0", Commit: "768bc86", Go: "go1.26.8"},
		Start:  o.Start,
		End:    o.Start.Add(2*time.Hour + 13*time.Minute),
		Host: result.Host{
			Hostname: "bench-a", Kernel: "6.1.0-28-amd64", OS: "Debian GNU/Linux 12 (bookworm)",
			CPUModel: "AMD EPYC 7443P 24-Core Processor", Cores: 48, MemBytes: 256 << 30,
		},
		Config: map[string]string{
			"duration": "30s", "warmup": "5s", "repeats": "5", "nic": "mlx5_core 100 Gbit/s",
			"peer": "bench-b", "irq_affinity": "spread", "cpu_governor": "performance",
		},
	}
	for _, dp := range datapaths {
		s.Datapaths = append(s.Datapaths, result.Datapath{Name: dp.name, Description: dp.desc, PacketPath: dp.packetPath, Skipped: dp.skipped})
		if dp.skipped != "" {
			s.Skipped = append(s.Skipped, result.Skip{Labels: map[string]string{"datapath": dp.name}, Reason: dp.skipped})
		}
	}
	t0 := o.Start
	add := func(labels map[string]string, dp dpModel, test string, flows int, mtu int, extra float64, noise float64) {
		f := o.Factor[dp.name]
		if f == 0 {
			f = 1
		}
		run := result.Run{Labels: labels, Config: map[string]string{"duration": "30s", "msg_size": msgSize(test)}}
		for i := 0; i < 5; i++ {
			m := metrics(rng, dp, test, flows, mtu, labels["path"], f*extra, noise)
			if noise > 0.1 && i == 3 {
				// One repeat far outside the rest (another tenant woke up).
				for k, v := range m {
					if k == result.TransPerSec || k == result.ThroughputBitsPerSec {
						m[k] = round(v * 0.35)
					}
				}
			}
			if o.Evidence {
				addEvidence(m, dp.name, test, flows, labels["path"])
			}
			rep := result.Repeat{Index: i, Start: t0, DurationSec: 30, Metrics: m}
			t0 = t0.Add(35 * time.Second)
			run.Repeats = append(run.Repeats, rep)
		}
		if labels["datapath"] == "vxlan" && labels["test"] == "tcp_crr" && labels["flows"] == "1" && labels["path"] == "cross-node" {
			run.Repeats[4].Error = "client: connect: connection timed out"
			run.Repeats[4].Metrics = nil
			run.Warnings = append(run.Warnings, "repeat 4 failed: client: connect: connection timed out")
		}
		if o.Evidence {
			pmtu := mtu
			if dp.name == "vxlan" {
				pmtu -= 50
			}
			run.Config["path_mtu"] = strconv.Itoa(pmtu)
		}
		run.Summary = result.SummarizeRepeats(run.Repeats)
		s.Runs = append(s.Runs, run)
	}
	for _, dp := range datapaths {
		if dp.skipped != "" {
			continue
		}
		paths := []string{"cross-node", "same-node"}
		if dp.name == "baseline" {
			paths = []string{"node-to-node"}
		}
		for _, test := range tests {
			for _, flows := range []int{1, 32} {
				for _, path := range paths {
					l := map[string]string{"datapath": dp.name, "path": path, "test": test, "flows": strconv.Itoa(flows), "mtu": "1500"}
					if dp.name == "vxlan" && path == "same-node" && test == "udp_stream" && flows == 32 {
						s.Skipped = append(s.Skipped, result.Skip{Labels: l, Reason: "udp_stream with 32 flows: the receiver dropped every datagram in the warm-up (socket buffer too small: net.core.rmem_max 212992)"})
						continue
					}
					noise := 0.01
					if dp.name == "bridge" && path == "same-node" && test == "tcp_crr" && flows == 32 {
						noise = 0.18
					}
					add(l, dp, test, flows, 1500, 1, noise)
				}
			}
		}
	}
	// MTU sweep: tcp_stream, 1 flow, cross-node (node-to-node for the baseline).
	for _, name := range []string{"baseline", "veth-routing", "vxlan", "ebpf-host-routing"} {
		dp := model(name)
		path := "cross-node"
		if name == "baseline" {
			path = "node-to-node"
		}
		for _, mtu := range []int{1500, 4000, 9000} {
			l := map[string]string{"datapath": name, "path": path, "test": "tcp_stream", "flows": "1", "mtu": strconv.Itoa(mtu), "scenario": "mtu-sweep"}
			add(l, dp, "tcp_stream", 1, mtu, 1, 0.01)
		}
	}
	// Egress filter: tcp_rr, 1 flow, cross-node, growing rule counts.
	for _, name := range []string{"veth-routing", "ebpf-host-routing"} {
		dp := model(name)
		for _, rules := range []int{10, 1000, 100000, 1000000} {
			// iptables walks the rules linearly, eBPF looks them up in a map.
			cost := 1 + float64(rules)/40000
			if name == "ebpf-host-routing" {
				cost = 1 + 0.01*math.Log10(float64(rules))
			}
			l := map[string]string{"datapath": name, "path": "cross-node", "test": "tcp_rr", "flows": "1", "mtu": "1500", "scenario": "egress-filter", "rules": strconv.Itoa(rules)}
			add(l, dp, "tcp_rr", 1, 1500, 1/cost, 0.01)
		}
	}
	return s
}

func model(name string) dpModel {
	for _, d := range datapaths {
		if d.name == name {
			return d
		}
	}
	panic("unknown datapath " + name)
}

func msgSize(test string) string {
	switch test {
	case "tcp_stream":
		return "131072"
	case "udp_stream":
		return "1472"
	}
	return "1"
}

// round keeps 6 significant digits so the JSON stays readable.
func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	e := math.Floor(math.Log10(math.Abs(v))) - 5
	p := math.Pow(10, e)
	return math.Round(v/p) * p
}

func metrics(rng *rand.Rand, dp dpModel, test string, flows, mtu int, path string, f, noise float64) map[string]float64 {
	n := func() float64 { return 1 + noise*rng.NormFloat64() }
	same := path == "same-node"
	m := map[string]float64{}
	hostCPU := 0.0
	switch test {
	case "tcp_stream", "udp_stream":
		var bps float64
		if test == "tcp_stream" {
			bps = 38e9 * dp.tput
			if flows > 1 {
				bps = math.Min(94e9, 38e9*float64(flows)/3) * math.Min(1, dp.tput*1.12)
			}
			bps *= math.Pow(float64(mtu)/1500, 0.28)
		} else {
			bps = 9.5e9 * dp.tput
			if flows > 1 {
				bps = 61e9 * dp.tput
			}
		}
		if same {
			bps *= 1.18
		}
		bps *= f * n()
		m[result.ThroughputBitsPerSec] = round(bps)
		hostCPU = 100 * float64(flows) * 0.9 * dp.cpu * math.Max(0.3, bps/38e9) / (float64(mtu) / 1500 * 0.5)
		if flows > 1 {
			hostCPU = 100 * 11 * dp.cpu * bps / 94e9
		}
		hostCPU *= n()
		m[result.HostCPUPct] = round(hostCPU)
		m[result.CPUPctPer100Gbit] = round(hostCPU * 100e9 / bps)
		if test == "tcp_stream" {
			m[result.TCPRetransmits] = math.Round(math.Abs(40 * float64(flows) * n() / dp.tput))
		} else {
			m[result.LossPct] = round(math.Abs(0.02 / dp.tput * float64(flows) * n()))
		}
	default:
		base := map[string]float64{"tcp_rr": 52000, "tcp_crr": 14500, "http": 21000}[test]
		tps := base * dp.trans
		if flows > 1 {
			tps *= 21 * math.Min(1, dp.trans*1.05)
		}
		if same {
			tps *= 1.25
		}
		tps *= f * n()
		m[result.TransPerSec] = round(tps)
		// Per-flow latency from the rate.
		p50 := 1e6 / (tps / float64(flows))
		m[result.LatencyUsP50] = round(p50 * 0.96 * n())
		m[result.LatencyUsP90] = round(p50 * 1.31 * n())
		m[result.LatencyUsP99] = round(p50 * 2.4 * n() / math.Sqrt(dp.trans))
		m[result.LatencyUsP999] = round(p50 * 5.1 * n() / dp.trans)
		hostCPU = math.Min(4800, 100*float64(flows)*0.85*n())
		m[result.HostCPUPct] = round(hostCPU)
		m[result.CPUUsPerTrans] = round(hostCPU / 100 * 1e6 / tps)
	}
	return m
}

// addEvidence adds the lab's per-repeat evidence to m: packet counts from
// the repeat's own rate over its 30 s window, and what each datapath's
// design implies (conntrack only where netfilter sees the packets, BPF
// redirects only for eBPF host routing, VXLAN encapsulation only for vxlan).
func addEvidence(m map[string]float64, dp, test string, flows int, path string) {
	var packets float64
	if v, ok := m[result.ThroughputBitsPerSec]; ok {
		packets = v * 30 / 8 / 1448
	} else {
		packets = 2 * 30 * m[result.TransPerSec]
	}
	packets = math.Round(packets)
	conns := float64(flows)
	if test == "tcp_crr" || test == "http" {
		conns = math.Round(m[result.TransPerSec] * 60) // TIME_WAIT keeps them about a minute
	}
	cross := path == "cross-node"
	switch dp {
	case "baseline":
		m[result.ConntrackEntries] = 0
	case "veth-routing", "bridge":
		m[result.ConntrackEntries] = math.Min(262144, conns)
		m["conntrack_new_packets"] = conns
		m["nft_forward_packets"] = packets
	case "veth-routing-notrack":
		m[result.ConntrackEntries] = 0
		m["nft_forward_packets"] = packets
	case "vxlan":
		m[result.ConntrackEntries] = math.Min(262144, conns)
		m["nft_forward_packets"] = packets
		if cross {
			m["vxlan_tx_packets"] = packets
		} else {
			m["vxlan_tx_packets"] = 0
		}
	case "ebpf-host-routing":
		m[result.ConntrackEntries] = 0
		m["nft_forward_packets"] = 0
		m["bpf_redirect_peer_packets"] = packets
		if cross {
			m["bpf_redirect_neigh_packets"] = packets
		} else {
			m["bpf_redirect_neigh_packets"] = 0
		}
		m["bpf_pass_packets"] = 4
		m["bpf_ct_new_packets"] = conns
		m["bpf_ct_established_packets"] = packets
	}
}
