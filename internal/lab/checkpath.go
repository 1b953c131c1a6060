package lab

import (
	"fmt"
	"strings"
)

// Evidence metrics: what a repeat's packets did in the lab, measured around
// every repeat of every cell (see Evidence). Counters are deltas over the
// repeat summed over both nodes; conntrack_entries is the count after it.
const (
	MetricConntrackEntries   = "conntrack_entries"
	MetricConntrackNew       = "conntrack_new_packets"
	MetricConntrackDrops     = "conntrack_drops"
	MetricConntrackInvalid   = "conntrack_invalid_packets"
	MetricNftForward         = "nft_forward_packets"
	MetricVXLANTx            = "vxlan_tx_packets"
	MetricWireTxPackets      = "wire_tx_packets"
	MetricWireTxBytes        = "wire_tx_bytes"
	MetricBPFRedirectPeer    = "bpf_redirect_peer_packets"
	MetricBPFRedirectNeigh   = "bpf_redirect_neigh_packets"
	MetricBPFRedirectHost    = "bpf_redirect_host_packets"
	MetricBPFPass            = "bpf_pass_packets"
	MetricBPFDrop            = "bpf_drop_packets"
	MetricBPFCTNew           = "bpf_ct_new_packets"
	MetricBPFCTEstablished   = "bpf_ct_established_packets"
	MetricBPFCTReply         = "bpf_ct_reply_packets"
	MetricBPFPolicyDenied    = "bpf_policy_denied_packets"
	evidenceUnmeasuredPrefix = "path proof incomplete: "
)

// bpfCounterMetrics maps CounterReporter keys (without the "nodeN."
// prefix) to metrics.
var bpfCounterMetrics = map[string]string{
	"redirect_peer":  MetricBPFRedirectPeer,
	"redirect_neigh": MetricBPFRedirectNeigh,
	"redirect_host":  MetricBPFRedirectHost,
	"pass":           MetricBPFPass,
	"drop":           MetricBPFDrop,
	"ct_new":         MetricBPFCTNew,
	"ct_established": MetricBPFCTEstablished,
	"ct_reply":       MetricBPFCTReply,
	"policy_denied":  MetricBPFPolicyDenied,
}

// CheckPath compares a repeat's evidence metrics with what the datapath
// claims and returns one warning per mismatch (none when the run took the
// claimed path). A claim whose metric is absent (not measured) gives a
// warning too. Unknown datapaths and datapaths without claims give none.
func CheckPath(datapath string, kind PathKind, m map[string]float64) []string {
	dp, err := NewDatapath(datapath)
	if err != nil {
		return nil
	}
	c, ok := dp.(Claimer)
	if !ok {
		return nil
	}
	return checkClaims(datapath, kind, c.Claims(), m)
}

func checkClaims(datapath string, kind PathKind, c PathClaims, m map[string]float64) []string {
	var warns, missing []string
	get := func(name string) (float64, bool) {
		v, ok := m[name]
		if !ok {
			missing = append(missing, name)
		}
		return v, ok
	}
	w := func(format string, a ...any) {
		warns = append(warns, fmt.Sprintf("%s did not take its claimed path: ", datapath)+fmt.Sprintf(format, a...))
	}
	if c.NftForward && !c.BPF {
		if n, ok := get(MetricConntrackNew); ok {
			switch {
			case c.Conntrack && n == 0:
				w("no forwarded packet in conntrack state new (%s = 0): conntrack not engaged", MetricConntrackNew)
			case !c.Conntrack && n > 0:
				w("%.0f forwarded packets in conntrack state new on a NOTRACK datapath", n)
			}
		}
	}
	if c.BPF {
		peer, ok1 := get(MetricBPFRedirectPeer)
		neigh, ok2 := get(MetricBPFRedirectNeigh)
		host := m[MetricBPFRedirectHost] // only ebpf-host-routing-redirect has it: optional
		if ok1 && ok2 && peer+neigh+host == 0 {
			w("the BPF program redirected no packet")
		}
		if n, ok := get(MetricNftForward); ok && n > 0 {
			w("%.0f packets crossed the nodes' nft forward chain instead of the BPF redirect", n)
		}
		if n, ok := get(MetricConntrackNew); ok && n > 0 {
			w("%.0f forwarded packets in kernel conntrack state new (BPF bypass claimed)", n)
		}
		if n := m[MetricBPFDrop] + m[MetricBPFPolicyDenied]; n > 0 {
			w("the BPF program dropped %.0f packets", n)
		}
	}
	if c.VXLAN && kind == CrossNode {
		if n, ok := get(MetricVXLANTx); ok && n == 0 {
			w("the VXLAN devices sent no packet on a cross-node path")
		}
	}
	if n := m[MetricConntrackDrops]; n > 0 {
		warns = append(warns, fmt.Sprintf("%s: conntrack dropped %.0f packets or entries during the repeat (table full?)", datapath, n))
	}
	if len(missing) > 0 {
		warns = append(warns, evidenceUnmeasuredPrefix+datapath+": not measured: "+strings.Join(missing, ", "))
	}
	return warns
}

// checkWireFrames warns when the NIC-like wire carried frames larger on
// average than its MTU plus the Ethernet header: segmentation was not in
// effect.
func checkWireFrames(topo *Topology, wireMTU int, m map[string]float64) string {
	if topo == nil || topo.Wire != WireNIC || wireMTU == 0 {
		return ""
	}
	pkts, bytes := m[MetricWireTxPackets], m[MetricWireTxBytes]
	if pkts == 0 {
		return ""
	}
	if avg := bytes / pkts; avg > float64(wireMTU+14) {
		return fmt.Sprintf("NIC-like wire carried frames of %.0f bytes on average, above MTU %d + 14: not segmented", avg, wireMTU)
	}
	return ""
}
