package reporttest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/pprof/profile"

	"github.com/cnibench/cnibench/pkg/result"
)

// ProfileOptions vary the CPU-profiled set.
type ProfileOptions struct {
	// Repeats per run; 0 means 5.
	Repeats int
	// Datapaths profiled, in the set's order; nil means veth-routing,
	// bridge and ebpf-host-routing.
	Datapaths []string
	// Tests profiled (cross-node, 1 flow); nil means tcp_rr and tcp_stream.
	Tests []string
	// Shift adds percentage points to families' shares of every datapath
	// (a "new" set), taken from kernel_other so that they still sum to 100.
	Shift map[string]float64
}

// ProfileShares are the invented median exclusive shares (%) per family of
// the profiled datapaths: eBPF host routing skips netfilter, the second
// veth traversal and the backlog pass and spends some of it in BPF; the
// bridge adds bridge work to veth routing's.
var ProfileShares = map[string]map[string]float64{
	"veth-routing":      {"netfilter": 14, "veth": 9, "backlog": 8, "bpf": 0.2, "tcpip": 30, "copy": 5, "sched_idle": 20, "engine": 9, "other_procs": 0.3, "kernel_other": 4.5},
	"bridge":            {"netfilter": 13, "veth": 9, "backlog": 8, "bridge": 5, "bpf": 0.2, "tcpip": 29, "copy": 5, "sched_idle": 18, "engine": 9, "other_procs": 0.3, "kernel_other": 3.5},
	"ebpf-host-routing": {"netfilter": 2, "veth": 4, "backlog": 0.4, "bpf": 6.2, "tcpip": 31, "copy": 5, "sched_idle": 37, "engine": 10, "other_procs": 0.3, "kernel_other": 4.1},
	"baseline":          {"netfilter": 1, "tcpip": 35, "copy": 6, "sched_idle": 42, "engine": 11, "other_procs": 0.3, "kernel_other": 4.7},
}

// familyStack is a representative kernel stack (root first, below the
// process frame) per family, for the synthetic pprof profiles.
var familyStack = map[string][]string{
	"netfilter":    {"entry_SYSCALL_64", "__sys_sendto", "tcp_sendmsg", "ip_output", "nf_hook_slow", "nf_conntrack_in"},
	"veth":         {"entry_SYSCALL_64", "__sys_sendto", "tcp_sendmsg", "dev_queue_xmit", "veth_xmit"},
	"backlog":      {"do_softirq", "net_rx_action", "process_backlog"},
	"bridge":       {"do_softirq", "net_rx_action", "br_handle_frame", "br_forward"},
	"bpf":          {"do_softirq", "net_rx_action", "tcx_ingress", "bpf_prog:cil_from_container"},
	"tcpip":        {"entry_SYSCALL_64", "__sys_sendto", "tcp_sendmsg", "tcp_write_xmit"},
	"copy":         {"entry_SYSCALL_64", "__sys_recvfrom", "tcp_recvmsg", "skb_copy_datagram_iter", "_copy_to_iter"},
	"sched_idle":   {"cpu_startup_entry", "do_idle", "default_idle"},
	"engine":       {"main.main", "github.com/cnibench/cnibench/internal/engine.(*client).rr"},
	"other_procs":  {"[unknown] libc.so.6"},
	"kernel_other": {"entry_SYSCALL_64", "do_syscall_64", "__x64_sys_futex"},
}

// ProfiledSet returns a set of CPU-profiled cells (label cpu_profile=on):
// each repeat has cpu_share_<family> metrics near ProfileShares (± 1 %,
// deterministic) and cpu_profile_samples, each run a Profile pointing to
// profiles/<datapath>.<test>.pb.gz (write them with WriteProfiles).
func ProfiledSet(o ProfileOptions) *result.Set {
	if o.Repeats == 0 {
		o.Repeats = 5
	}
	if o.Datapaths == nil {
		o.Datapaths = []string{"veth-routing", "bridge", "ebpf-host-routing"}
	}
	if o.Tests == nil {
		o.Tests = []string{"tcp_rr", "tcp_stream"}
	}
	s := &result.Set{
		Schema: result.SchemaResults,
		Tool:   result.Tool{Name: "cnibench", Version: "v0.0.0-test"},
		Start:  time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC),
		Host:   result.Host{Hostname: "lab", Kernel: "6.18.0", Cores: 2},
		Config: map[string]string{"cpu_profile_hz": "999"},
	}
	for _, dp := range o.Datapaths {
		s.Datapaths = append(s.Datapaths, result.Datapath{Name: dp, Description: knownModel(dp).desc})
	}
	for ti, test := range o.Tests {
		for di, dp := range o.Datapaths {
			shares := Shares(dp, o.Shift)
			run := result.Run{Labels: map[string]string{
				"datapath": dp, "path": "cross-node", "test": test, "flows": "1", "mtu": "1500", "cpu_profile": "on",
			}}
			for i := range o.Repeats {
				m := map[string]float64{"cpu_profile_samples": 19980 + float64(10*i)}
				j := 0
				for _, f := range sortedKeys(shares) {
					// ±1 % of the value, a different pattern per family,
					// datapath and test.
					jit := 1 + 0.005*float64((i*3+j+di+ti)%5-2)
					m[result.CPUSharePrefix+f] = round(shares[f] * jit)
					m[result.CPUInclPrefix+f] = round(min(100, shares[f]*1.5*jit))
					j++
				}
				if test == "tcp_rr" {
					m[result.TransPerSec] = round(20000 * (1 + 0.01*float64(i%3)) * knownModel(dp).trans)
				} else {
					m[result.ThroughputBitsPerSec] = round(9e9 * (1 + 0.01*float64(i%3)) * knownModel(dp).tput)
				}
				run.Repeats = append(run.Repeats, result.Repeat{Metrics: m})
			}
			run.Summary = result.SummarizeRepeats(run.Repeats)
			run.Profile = &result.Profile{
				File:    filepath.ToSlash(filepath.Join("profiles", fmt.Sprintf("%s.%s.pb.gz", dp, test))),
				Samples: 99900, Windows: o.Repeats, Seconds: 50, Hz: 999, CPUs: 2,
			}
			s.Runs = append(s.Runs, run)
		}
	}
	return s
}

// knownModel is the datapath's model, or a neutral one for a name the
// fixtures do not know.
func knownModel(dp string) dpModel {
	for _, d := range datapaths {
		if d.name == dp {
			return d
		}
	}
	return dpModel{name: dp, desc: dp, tput: 1, trans: 1, cpu: 1}
}

// Shares are a datapath's invented median shares with shift applied.
func Shares(dp string, shift map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for f := range familyStack {
		out[f] = 0 // every family is measured, as profile.Breakdown does
	}
	for f, v := range ProfileShares[dp] {
		out[f] = v
	}
	for f, d := range shift {
		out[f] += d
		out["kernel_other"] -= d
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// WriteProfiles writes a small synthetic pprof profile for every run of
// set that has a Profile, into dir (Profile.File is relative to it): one
// stack per family, its sample count proportional to the family's share.
func WriteProfiles(set *result.Set, dir string) error {
	for _, r := range set.Runs {
		if r.Profile == nil {
			continue
		}
		shares := map[string]float64{}
		for _, rep := range r.Repeats[:1] {
			for k, v := range rep.Metrics {
				if f, ok := cutShare(k); ok {
					shares[f] = v
				}
			}
		}
		p := Pprof(shares)
		path := filepath.Join(dir, filepath.FromSlash(r.Profile.File))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := p.Write(f); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

func cutShare(k string) (string, bool) {
	if len(k) > len(result.CPUSharePrefix) && k[:len(result.CPUSharePrefix)] == result.CPUSharePrefix {
		return k[len(result.CPUSharePrefix):], true
	}
	return "", false
}

// Pprof builds a pprof profile with one stack per family of shares
// (10 samples per percent), under a process frame (comm:cnibench for the
// engine and the kernel work of its system calls, comm:swapper/0 for idle).
func Pprof(shares map[string]float64) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        1001001,
		DurationNanos: int64(50 * time.Second),
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		fn := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name}
		funcs[name] = fn
		p.Function = append(p.Function, fn)
		l := &profile.Location{ID: uint64(len(locs) + 1), Address: uint64(0x1000 * (len(locs) + 1)), Line: []profile.Line{{Function: fn}}}
		locs[name] = l
		p.Location = append(p.Location, l)
		return l
	}
	for _, f := range sortedKeys(shares) {
		st, ok := familyStack[f]
		n := int64(shares[f]*10 + 0.5)
		if !ok || n <= 0 {
			continue
		}
		comm := "comm:cnibench"
		if f == "sched_idle" {
			comm = "comm:swapper/0"
		} else if f == "other_procs" {
			comm = "comm:sshd"
		}
		frames := append([]string{comm}, st...)
		var ls []*profile.Location
		for i := len(frames) - 1; i >= 0; i-- { // leaf first
			ls = append(ls, loc(frames[i]))
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{n, n * p.Period}})
	}
	return p
}
