package profile

import "strings"

// Family is a documented group of symbols whose share of the samples a
// profile's Breakdown reports. A kernel frame belongs to the first family
// in Families (table order) with a pattern that matches its function name;
// the user-space families (engine, other_procs) and kernel_other have no
// patterns (see Breakdown).
type Family struct {
	// Name is the key in Shares (part of the results' vocabulary).
	Name string
	// Doc says what the family is, in one line.
	Doc string
	// Prefixes match the start of a kernel function name.
	Prefixes []string
	// Names match a whole kernel function name, compiler suffixes
	// (".isra.0", ".constprop.0", ".cold") ignored.
	Names []string
}

// The names of the families without patterns.
const (
	FamilyEngine      = "engine"
	FamilyOtherProcs  = "other_procs"
	FamilyKernelOther = "kernel_other"
	FamilyBPF         = "bpf"
)

// EngineComm is the process name whose user-space frames are the engine.
const EngineComm = "cnibench"

// Families are the symbol families, in matching order: a kernel frame
// belongs to the first family it matches (copy is before tcpip so that
// skb_copy_datagram_iter is a copy, not the TCP/IP stack).
var Families = []Family{
	{Name: "netfilter", Doc: "netfilter hooks, iptables/nftables rule evaluation, ipset, conntrack and NAT",
		Prefixes: []string{"nf_", "__nf_", "nft_", "__nft_", "nfnetlink", "ipt_", "ip6t_", "ebt_", "xt_", "iptable_", "ip6table_",
			"ipv4_conntrack", "ipv6_conntrack", "ipv4_confirm", "ipv6_confirm", "ip_set_", "hash_net", "hash_ip", "bitmap_ip",
			"ctnetlink_", "br_nf_", "conntrack_"}},
	{Name: "veth", Doc: "veth (and netkit) pair transmit, their NAPI and XDP paths",
		Prefixes: []string{"veth_", "__veth_", "netkit_"}},
	{Name: "backlog", Doc: "the per-CPU backlog a veth or loopback transmit hands packets to, and its processing",
		Names: []string{"process_backlog", "enqueue_to_backlog", "flush_backlog"}, Prefixes: []string{"netif_rx", "__netif_rx"}},
	{Name: "bridge", Doc: "the Linux bridge: forwarding database, flooding, delivery to ports",
		Prefixes: []string{"br_", "__br_", "nbp_"}},
	{Name: "tunnel", Doc: "VXLAN and UDP tunnels, Geneve, IPIP/GRE, WireGuard and IPsec (xfrm, ESP) framing",
		Prefixes: []string{"vxlan_", "__vxlan_", "udp_tunnel", "__udp_tunnel", "setup_udp_tunnel", "udp_encap", "geneve_",
			"ip_tunnel_", "iptunnel_", "ipip_", "gre_", "ipgre_", "gro_cells_", "skb_tunnel", "wg_", "xfrm", "__xfrm", "esp_", "esp4_", "esp6_"}},
	{Name: FamilyBPF, Doc: "BPF programs (bpf_prog:<name>), their helpers, maps, trampolines and the tc/tcx hooks that run them",
		Prefixes: []string{BPFPrefix, "bpf_", "__bpf_", "___bpf_", "htab_", "__htab_", "trie_", "array_map_", "percpu_array_",
			"tcx_", "cls_bpf_", "sk_skb_", "sock_map_"}},
	{Name: "copy", Doc: "copies between user and kernel memory (send and receive payload copies, their checks)",
		Names: []string{"rep_movs_alternative", "copyout", "copyin", "simple_copy_to_iter", "__skb_datagram_iter",
			"skb_do_copy_data_nocache", "skb_copy_to_page_nocache", "__check_object_size", "check_heap_object", "check_stack_object"},
		Prefixes: []string{"copy_user", "_copy_to_iter", "_copy_from_iter", "copy_to_user", "copy_from_user", "_copy_to_user",
			"_copy_from_user", "__copy_user", "__copy_to_user", "__copy_from_user", "copy_page_to_iter", "copy_page_from_iter",
			"skb_copy_datagram", "csum_and_copy", "csum_partial_copy"}},
	{Name: "crypto", Doc: "cryptography: ciphers, MACs and hashes (ChaCha20-Poly1305, AES-GCM, SHA, BLAKE2s, Curve25519)",
		Prefixes: []string{"crypto_", "__crypto_", "chacha", "poly1305", "aes", "_aes", "gcm", "ghash", "gf128mul", "clmul",
			"sha1", "sha256", "sha512", "blake2s", "curve25519", "skcipher_", "aead_", "scatterwalk_", "simd_"}},
	{Name: "tcpip", Doc: "the TCP/IP stack and core networking: sockets, TCP, UDP, IP, ICMP, routing, neighbours, skb life cycle, qdiscs, GRO, device transmit and receive",
		Names: []string{"net_rx_action", "loopback_xmit", "kfree_skb", "consume_skb", "__sys_sendto", "__sys_recvfrom",
			"__sys_sendmsg", "__sys_recvmsg", "__sys_connect", "__sys_accept4", "__sys_socket"},
		Prefixes: []string{"tcp_", "__tcp_", "tcp4_", "tcp6_", "ip_", "__ip_", "ip4_", "ip6_", "__ip6_", "ipv4_", "ipv6_",
			"udp_", "__udp", "udp4_", "udp6_", "udpv6_", "inet_", "__inet_", "inet6_", "icmp", "raw_v4", "raw_v6", "raw_local_deliver", "raw_rcv", "raw_send", "raw_recv", "ping_",
			"sock_", "__sock_", "sk_", "__sk_", "skb_", "__skb_", "kfree_skb", "__kfree_skb", "__alloc_skb", "alloc_skb",
			"napi_", "__napi_", "netif_", "__netif_", "netdev_", "__netdev_", "dev_queue_xmit", "__dev_queue_xmit",
			"dev_hard_start_xmit", "dev_forward_skb", "__dev_forward_skb", "dev_gro", "__dev_direct_xmit", "validate_xmit",
			"neigh_", "__neigh_", "fib_", "__fib_", "fib4_", "fib6_", "dst_", "rt_dst", "rt_set_nexthop", "rt_cache", "ip_route", "sch_", "__qdisc", "qdisc_",
			"pfifo_", "fq_codel", "gro_", "csum_", "__x64_sys_send", "__x64_sys_recv", "__x64_sys_connect", "__x64_sys_accept"}},
	{Name: "sched_idle", Doc: "the scheduler (context switches, wake-ups, load balancing) and the idle loop",
		Names: []string{"schedule", "__schedule", "do_idle", "cpu_startup_entry", "start_secondary", "native_safe_halt",
			"pv_native_safe_halt", "safe_halt", "context_switch", "try_to_wake_up", "activate_task", "resched_curr"},
		Prefixes: []string{"schedule_", "preempt_schedule", "__cond_resched", "cpu_idle", "default_idle", "arch_cpu_idle",
			"cpuidle_", "intel_idle", "acpi_idle", "poll_idle", "mwait_idle", "finish_task_switch", "__switch_to",
			"pick_next_", "__pick_next", "put_prev_", "set_next_", "enqueue_task", "dequeue_task", "enqueue_entity",
			"dequeue_entity", "ttwu_", "sched_", "__sched_", "update_curr", "update_load_avg", "psi_", "tick_nohz_idle",
			"idle_", "raw_spin_rq_", "__wake_up", "wake_up_", "check_preempt", "load_balance", "newidle_balance", "sched_balance",
			"select_task_rq", "__update_load_avg"}},
	{Name: FamilyEngine, Doc: "user-space frames of processes named " + EngineComm + " (the workload engine)"},
	{Name: FamilyOtherProcs, Doc: "other processes than the engine (a build, a control plane, an agent beside the benchmark), user and kernel time, except the softirq network work that interrupts them (classified by its frames)"},
	{Name: FamilyKernelOther, Doc: "kernel samples none of whose frames matches a family (system call entry, interrupts, memory management, …)"},
}

// stripSuffix drops a compiler suffix: "tcp_sendmsg.cold" → "tcp_sendmsg".
func stripSuffix(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// Match reports whether a kernel function name belongs to f.
func (f *Family) Match(name string) bool {
	base := stripSuffix(name)
	for _, n := range f.Names {
		if base == n {
			return true
		}
	}
	for _, p := range f.Prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// KernelFamily returns the family of a kernel function name, or "" when
// none matches.
func KernelFamily(name string) string {
	for i := range Families {
		if Families[i].Match(name) {
			return Families[i].Name
		}
	}
	return ""
}
