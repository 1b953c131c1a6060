package profile

import (
	"flag"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestKernelFamily(t *testing.T) {
	tests := []struct{ fn, want string }{
		{"nf_hook_slow", "netfilter"},
		{"nf_conntrack_in", "netfilter"},
		{"ipt_do_table", "netfilter"},
		{"nft_do_chain", "netfilter"},
		{"hash_net4_test", "netfilter"},
		{"br_nf_pre_routing", "netfilter"},
		{"veth_xmit", "veth"},
		{"veth_poll", "veth"},
		{"netkit_xmit", "veth"},
		{"process_backlog", "backlog"},
		{"enqueue_to_backlog", "backlog"},
		{"netif_rx_internal", "backlog"},
		{"br_handle_frame", "bridge"},
		{"vxlan_xmit_one", "tunnel"},
		{"udp_tunnel_xmit_skb", "tunnel"},
		{"ip_tunnel_xmit", "tunnel"},
		{"wg_packet_encrypt_worker", "tunnel"},
		{"bpf_prog:cil_from_container", "bpf"},
		{"bpf_redirect_peer", "bpf"},
		{"htab_map_lookup_elem", "bpf"},
		{"tcx_run", "bpf"},
		{"_copy_to_iter", "copy"},
		{"_copy_from_iter", "copy"},
		{"copy_user_generic_unrolled", "copy"},
		{"rep_movs_alternative", "copy"},
		{"skb_copy_datagram_iter", "copy"},
		{"__skb_datagram_iter", "copy"},
		{"chacha20_4block_xor_avx512vl", "crypto"},
		{"poly1305_blocks_avx2", "crypto"},
		{"aesni_gcm_enc", "crypto"},
		{"tcp_sendmsg", "tcpip"},
		{"tcp_v4_rcv", "tcpip"},
		{"tcp_sendmsg_locked.cold", "tcpip"},
		{"ip_finish_output2", "tcpip"},
		{"__netif_receive_skb_core.constprop.0", "tcpip"},
		{"net_rx_action", "tcpip"},
		{"skb_release_data", "tcpip"},
		{"loopback_xmit", "tcpip"},
		{"udp_sendmsg", "tcpip"},
		{"__schedule", "sched_idle"},
		{"schedule", "sched_idle"},
		{"finish_task_switch.isra.0", "sched_idle"},
		{"pv_native_safe_halt", "sched_idle"},
		{"do_idle", "sched_idle"},
		{"try_to_wake_up", "sched_idle"},
		{"_raw_spin_lock", ""},
		{"raw_spin_rq_lock_nested", "sched_idle"},
		{"rt_mutex_lock", ""},
		{"memcpy", ""},
		{"__memcpy", ""},
		{"entry_SYSCALL_64", ""},
		{"do_syscall_64", ""},
		{"handle_softirqs", ""},
		{"schedulex", ""},
	}
	for _, tt := range tests {
		if got := KernelFamily(tt.fn); got != tt.want {
			t.Errorf("KernelFamily(%q) = %q, want %q", tt.fn, got, tt.want)
		}
	}
}

func TestBreakdown(t *testing.T) {
	user := []uint64{contextUser, 0x401000}
	p := samplesProfile(t,
		// engine user space
		rawChain{100, 0, 10, user},
		// another process's user space
		rawChain{200, 0, 5, user},
		// copy inside tcp_sendmsg under a system call of the engine
		rawChain{100, 0, 20, append(kchain(kCopy, kTCPSend, kSyscall), user...)},
		// a lock taken by netfilter: the lock is passed over
		rawChain{100, 1, 5, append(kchain(kLock, kNF, kRX), user...)},
		// another process's system call: other_procs, not its kernel families
		rawChain{200, 1, 5, append(kchain(kEntry, kSyscall), user...)},
		// a BPF program in softirq on the idle task: bpf first
		rawChain{0, 1, 15, kchain(kBPF, kRX, kIdle)},
		// idle
		rawChain{0, 0, 40, kchain(kHalt, kIdle)},
	)
	sh := Breakdown(p.P)
	if sh.Samples != 100 {
		t.Fatalf("%d samples, want 100", sh.Samples)
	}
	wantEx := map[string]float64{"engine": .10, "other_procs": .10, "copy": .20, "netfilter": .05, "bpf": .15, "sched_idle": .40}
	wantIn := map[string]float64{"engine": .35, "other_procs": .10, "copy": .20, "tcpip": .40, "netfilter": .05, "bpf": .15, "sched_idle": .55}
	sum := 0.0
	for _, f := range Families {
		sum += sh.Exclusive[f.Name]
		if !near(sh.Exclusive[f.Name], wantEx[f.Name]) {
			t.Errorf("exclusive %s = %.3f, want %.3f", f.Name, sh.Exclusive[f.Name], wantEx[f.Name])
		}
		if !near(sh.Inclusive[f.Name], wantIn[f.Name]) {
			t.Errorf("inclusive %s = %.3f, want %.3f", f.Name, sh.Inclusive[f.Name], wantIn[f.Name])
		}
	}
	if !near(sum, 1) {
		t.Errorf("exclusive shares sum to %v", sum)
	}
	if len(sh.BPF) != 1 || !near(sh.BPF["cil_from_container"], .15) {
		t.Errorf("BPF %v, want cil_from_container 0.15", sh.BPF)
	}
	// Named otherwise, the engine's user space is other_procs.
	// (cnibench's system calls are then another process's; the netfilter
	// work of a softirq interrupting it stays netfilter.)
	if other := BreakdownFor(p.P, "iperf3"); !near(other.Exclusive["engine"], .05) || !near(other.Exclusive["other_procs"], .30) || !near(other.Exclusive["netfilter"], .05) {
		t.Errorf("with engine iperf3: %v", other.Exclusive)
	}
	base := Breakdown(samplesProfile(t, rawChain{0, 0, 1, kchain(kHalt)}).P)
	if d := sh.Delta(base); !near(d["sched_idle"], -60) || !near(d["copy"], 20) {
		t.Errorf("delta %v", d)
	}
	if empty := Breakdown(nil); empty.Samples != 0 || len(empty.Exclusive) != len(Families) {
		t.Errorf("breakdown of nothing: %+v", empty)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

var update = flag.Bool("update", false, "rewrite the family table in docs/profiles.md")

const (
	docPath    = "../../docs/profiles.md"
	tableBegin = "<!-- families:begin (generated: go test ./internal/profile -run TestFamilyDoc -update) -->\n"
	tableEnd   = "<!-- families:end -->\n"
)

// familyTable renders Families as the Markdown table of docs/profiles.md.
func familyTable() string {
	var b strings.Builder
	b.WriteString("| family | what | kernel function names (prefix…, or exact) |\n|---|---|---|\n")
	for _, f := range Families {
		var pats []string
		for _, n := range f.Names {
			pats = append(pats, "`"+n+"`")
		}
		for _, p := range f.Prefixes {
			pats = append(pats, "`"+p+"…`")
		}
		if len(pats) == 0 {
			pats = []string{"(no patterns: see below)"}
		}
		b.WriteString("| `" + f.Name + "` | " + f.Doc + " | " + strings.Join(pats, " ") + " |\n")
	}
	return b.String()
}

// TestFamilyDoc keeps the table in docs/profiles.md equal to Families.
func TestFamilyDoc(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q block", docPath, tableBegin, tableEnd)
	}
	got := s[i+len(tableBegin) : j]
	want := familyTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(s[:i+len(tableBegin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the family table in %s is out of date: run go test ./internal/profile -run TestFamilyDoc -update", docPath)
}

// TestBreakdownOtherProcs: a busy host's other processes are other_procs,
// but the network work of a softirq that interrupts them is classified.
func TestBreakdownOtherProcs(t *testing.T) {
	user := []uint64{contextUser, 0x401000}
	p := samplesProfile(t,
		rawChain{200, 0, 6, append(kchain(kNF, kRX, kSyscall), user...)},   // softirq in iperf3's system call
		rawChain{200, 0, 3, append(kchain(kLock, kRX, kSyscall), user...)}, // softirq, nothing matched leafward but its entry
		rawChain{200, 0, 1, append(kchain(kNF, kSyscall), user...)},        // iperf3's own netfilter call
		rawChain{300, 1, 10, kchain(kNF, kRX)},                             // ksoftirqd: a kernel thread
	)
	sh := Breakdown(p.P)
	want := map[string]float64{"netfilter": .8, "tcpip": .15, "other_procs": .05}
	for _, f := range Families {
		if !near(sh.Exclusive[f.Name], want[f.Name]) {
			t.Errorf("exclusive %s = %.3f, want %.3f", f.Name, sh.Exclusive[f.Name], want[f.Name])
		}
	}
	if !near(sh.Inclusive["tcpip"], .95) || !near(sh.Inclusive["other_procs"], .05) {
		t.Errorf("inclusive %v", sh.Inclusive)
	}
}

// TestBreakdownOwnComm: a renamed binary's processes are the engine too.
func TestBreakdownOwnComm(t *testing.T) {
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skip("no /proc/self/comm:", err)
	}
	if !slices.Contains(engineComms(), strings.TrimSpace(string(b))) {
		t.Errorf("engineComms() = %v lacks this process's comm %q", engineComms(), b)
	}
}
