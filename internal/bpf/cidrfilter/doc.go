// Package cidrfilter holds cnibench's eBPF egress CIDR filters (issue 10): a TCX
// ingress program on a pod's node-side veth that drops IPv4 packets whose
// destination is in a set of deny CIDRs, with two lookup structures:
//
//   - KindLPM: one LPM trie map (BPF_F_NO_PREALLOC), one lookup per packet;
//   - KindHash: one hash map keyed by {prefix length, masked address},
//     probed once per prefix length present in the set, longest first (the
//     per-prefix-length hash layout Cilium announced, folded into one map
//     whose key carries the length; see README.md).
//
// Load creates the maps sized for the set and fills them with batch updates
// (BPF_MAP_UPDATE_BATCH); AttachIngress attaches the program with TCX. The
// BPF source is egress.c; the generated egress_bpfel.{go,o} are committed so
// that building cnibench needs no clang.
package cidrfilter
