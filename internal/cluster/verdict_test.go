package cluster

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube/agent"
	"github.com/cnibench/cnibench/internal/kube/cni"
	"github.com/cnibench/cnibench/pkg/result"
	"github.com/cnibench/cnibench/pkg/stats"
)

func TestMTUVerdict(t *testing.T) {
	vxlan := []string{"vxlan flannel.1"}
	tests := []struct {
		name      string
		pod, node int
		encap     []string
		overhead  int
		verdict   string
		summary   []string // substrings
	}{
		{name: "vxlan correct", pod: 1450, node: 1500, encap: vxlan, overhead: 50, verdict: "correct",
			summary: []string{"pod MTU 1450 = node MTU 1500 less encapsulation vxlan flannel.1 (50 bytes)"}},
		{name: "no encapsulation correct", pod: 1500, node: 1500, verdict: "correct",
			summary: []string{"pod MTU 1500 = node MTU 1500 less no encapsulation on the node"}},
		{name: "too large for the vxlan overhead", pod: 1500, node: 1500, encap: vxlan, overhead: 50, verdict: "misconfigured",
			summary: []string{"pod MTU 1500 exceeds node MTU 1500 less encapsulation vxlan flannel.1 (50 bytes) = 1450", "fragmented or dropped"}},
		{name: "too large, jumbo node", pod: 9000, node: 9000, encap: []string{"geneve genev_sys_6081"}, overhead: 50, verdict: "misconfigured",
			summary: []string{"exceeds", "= 8950"}},
		{name: "too small without encapsulation", pod: 1450, node: 1500, verdict: "misconfigured",
			summary: []string{"pod MTU 1450 is 50 bytes below node MTU 1500 less no encapsulation on the node = 1500", "less payload"}},
		{name: "too small with encapsulation", pod: 1400, node: 1500, encap: vxlan, overhead: 50, verdict: "misconfigured",
			summary: []string{"is 50 bytes below", "= 1450"}},
		{name: "pod MTU unreadable", pod: 0, node: 1500, verdict: "skipped", summary: []string{"could not be read"}},
		{name: "node MTU unreadable", pod: 1450, node: 0, encap: vxlan, overhead: 50, verdict: "skipped", summary: []string{"could not be read"}},
		{name: "negative MTU", pod: -1, node: 1500, verdict: "skipped", summary: []string{"could not be read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mtuVerdict(tt.pod, tt.node, tt.encap, tt.overhead)
			if f.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (summary %q)", f.Verdict, tt.verdict, f.Summary)
			}
			for _, s := range tt.summary {
				if !strings.Contains(f.Summary, s) {
					t.Errorf("summary %q lacks %q", f.Summary, s)
				}
			}
		})
	}
}

func TestEncryptionVerdict(t *testing.T) {
	tests := []struct {
		name     string
		c        agent.Capture
		verdict  string
		summary  string
		evidence string
	}{
		{name: "marker seen", c: agent.Capture{Frames: 5000, MarkerFrames: 1200, ByProtocol: map[string]uint64{"tcp": 4990, "arp": 10}},
			verdict: "clear", summary: "marker was seen in 1200 frames", evidence: "5000 frames, 1200 carrying the payload marker; by protocol: arp 10, tcp 4990"},
		{name: "marker seen in few frames is still clear", c: agent.Capture{Frames: 3, MarkerFrames: 1, ByProtocol: map[string]uint64{"udp/4789": 3}},
			verdict: "clear", summary: "in 1 frames"},
		{name: "no marker, enough frames", c: agent.Capture{Frames: 4000, ByProtocol: map[string]uint64{"udp/51820": 3990, "tcp": 6, "arp": 4}},
			verdict: "encrypted", summary: "no payload marker in 4000 frames", evidence: "by protocol: arp 4, tcp 6, udp/51820 3990"},
		{name: "no marker, exactly the minimum", c: agent.Capture{Frames: encMinFrames, ByProtocol: map[string]uint64{"esp": encMinFrames}},
			verdict: "encrypted"},
		{name: "no marker, one frame short", c: agent.Capture{Frames: encMinFrames - 1, ByProtocol: map[string]uint64{"tcp": encMinFrames - 1}},
			verdict: "inconclusive", summary: "only 99 frames were captured (fewer than 100)"},
		{name: "nothing captured", c: agent.Capture{}, verdict: "inconclusive", evidence: "0 frames, 0 carrying the payload marker; by protocol: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := encryptionVerdict(tt.c)
			if f.Verdict != tt.verdict {
				t.Errorf("verdict %q, want %q (summary %q)", f.Verdict, tt.verdict, f.Summary)
			}
			if !strings.Contains(f.Summary, tt.summary) {
				t.Errorf("summary %q lacks %q", f.Summary, tt.summary)
			}
			if len(f.Evidence) != 1 || !strings.Contains(f.Evidence[0], tt.evidence) {
				t.Errorf("evidence %q, want one line containing %q", f.Evidence, tt.evidence)
			}
			if f.Metrics["frames"] != float64(tt.c.Frames) || f.Metrics["marker_frames"] != float64(tt.c.MarkerFrames) {
				t.Errorf("metrics %v", f.Metrics)
			}
		})
	}
	// The protocols are listed sorted whatever the map's order.
	c := agent.Capture{Frames: 200, ByProtocol: map[string]uint64{}}
	for _, p := range []string{"udp/8472", "tcp", "esp", "arp", "icmp", "udp/4789", "udp", "gre"} {
		c.ByProtocol[p] = 25
	}
	want := "by protocol: arp 25, esp 25, gre 25, icmp 25, tcp 25, udp 25, udp/4789 25, udp/8472 25"
	for range 20 {
		if f := encryptionVerdict(c); !strings.HasSuffix(f.Evidence[0], want) {
			t.Fatalf("evidence %q, want it to end with %q", f.Evidence[0], want)
		}
	}
}

func TestCgroupUsage(t *testing.T) {
	const s = int64(time.Second)
	read := func(at int64, pods ...agent.PodCgroup) agent.CgroupReport {
		return agent.CgroupReport{Schema: agent.SchemaCgroup, TimeUnixNano: at, Pods: pods}
	}
	pod := func(uid string, cpu, mem uint64) agent.PodCgroup {
		return agent.PodCgroup{UID: uid, CPUUsageNanos: cpu, MemoryWorkingSetBytes: mem}
	}
	withErr := func(p agent.PodCgroup, e string) agent.PodCgroup { p.Error = e; return p }
	tests := []struct {
		name string
		a, b agent.CgroupReport
		want map[string]usage
	}{
		{name: "normal delta",
			a:    read(10*s, pod("u1", 1e9, 10<<20), pod("u2", 0, 0)),
			b:    read(12*s, pod("u1", 15e8, 20<<20), pod("u2", 2e9, 5<<20)),
			want: map[string]usage{"u1": {millicores: 250, memBytes: 20 << 20}, "u2": {millicores: 1000, memBytes: 5 << 20}}},
		{name: "idle pod",
			a:    read(1*s, pod("u1", 7, 1)),
			b:    read(11*s, pod("u1", 7, 1)),
			want: map[string]usage{"u1": {millicores: 0, memBytes: 1}}},
		{name: "error in the second reading",
			a:    read(1*s, pod("u1", 1, 1)),
			b:    read(2*s, withErr(pod("u1", 2, 2), " no cgroup of pod u1 under /host/sys/fs/cgroup\n")),
			want: map[string]usage{"u1": {err: "no cgroup of pod u1 under /host/sys/fs/cgroup"}}},
		{name: "error in the first reading",
			a:    read(1*s, withErr(pod("u1", 0, 0), "permission denied")),
			b:    read(2*s, pod("u1", 2, 2)),
			want: map[string]usage{"u1": {err: "permission denied"}}},
		{name: "second reading's error first",
			a:    read(1*s, withErr(pod("u1", 0, 0), "first")),
			b:    read(2*s, withErr(pod("u1", 0, 0), "second")),
			want: map[string]usage{"u1": {err: "second"}}},
		{name: "counters backwards (restarted pod)",
			a:    read(1*s, pod("u1", 5e9, 1)),
			b:    read(2*s, pod("u1", 1e9, 1)),
			want: map[string]usage{"u1": {err: "the counters went backwards (pod restarted?)"}}},
		{name: "clock backwards",
			a:    read(2*s, pod("u1", 1, 1)),
			b:    read(1*s, pod("u1", 2, 1)),
			want: map[string]usage{"u1": {err: "the counters went backwards (pod restarted?)"}}},
		{name: "same instant",
			a:    read(2*s, pod("u1", 1, 1)),
			b:    read(2*s, pod("u1", 2, 1)),
			want: map[string]usage{"u1": {err: "the counters went backwards (pod restarted?)"}}},
		{name: "missing in the first reading",
			a:    read(1*s, pod("u1", 1, 1)),
			b:    read(2*s, pod("u1", 1, 1), pod("u2", 1, 1)),
			want: map[string]usage{"u1": {memBytes: 1}, "u2": {err: "missing from the first reading"}}},
		{name: "missing in the second reading is left out",
			a:    read(1*s, pod("u1", 1, 1), pod("u2", 1, 1)),
			b:    read(2*s, pod("u1", 1, 1)),
			want: map[string]usage{"u1": {memBytes: 1}}},
		{name: "no pods", a: read(1 * s), b: read(2 * s), want: map[string]usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cgroupUsage(tt.a, tt.b)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for uid, w := range tt.want {
				g, ok := got[uid]
				if !ok || g.err != w.err || g.memBytes != w.memBytes || math.Abs(g.millicores-w.millicores) > 1e-9 {
					t.Errorf("%s: got %+v, want %+v", uid, g, w)
				}
			}
		})
	}
}

func TestFootprintFinding(t *testing.T) {
	pods := []cni.PodRef{
		{Namespace: "kube-system", Name: "cilium-a", Node: "n1", UID: "u1"},
		{Namespace: "kube-system", Name: "cilium-b", Node: "n2", UID: "u2"},
		{Namespace: "kube-system", Name: "cilium-operator", Node: "n3", UID: "u3"},
	}
	const mib = 1 << 20
	idle := map[string]usage{"u1": {millicores: 10, memBytes: 100 * mib}, "u2": {millicores: 20, memBytes: 50 * mib}, "u3": {err: "on node n3, which has no host pod of the run, and no metrics.k8s.io client"}}
	loaded := map[string]usage{"u1": {millicores: 300, memBytes: 110 * mib}, "u2": {millicores: 100, memBytes: 60 * mib}, "u3": {millicores: 5}}
	f := footprintFinding(pods, idle, loaded, 10*time.Second)
	if f.Verdict != "measured" {
		t.Errorf("verdict %q: %s", f.Verdict, f.Summary)
	}
	want := map[string]float64{"cni_pods": 3, "cni_pods_measured": 2, "cpu_millicores_idle": 30, "cpu_millicores_load": 400,
		"memory_bytes_idle": 150 * mib, "memory_bytes_load": 170 * mib}
	for k, v := range want {
		if f.Metrics[k] != v {
			t.Errorf("metric %s = %v, want %v", k, f.Metrics[k], v)
		}
	}
	if len(f.Metrics) != len(want) {
		t.Errorf("metrics %v", f.Metrics)
	}
	wantEv := []string{
		"kube-system/cilium-a on n1: idle 10.0 mCPU 100.0 MiB, under load 300.0 mCPU 110.0 MiB",
		"kube-system/cilium-b on n2: idle 20.0 mCPU 50.0 MiB, under load 100.0 mCPU 60.0 MiB",
		"kube-system/cilium-operator on n3: not measured: on node n3, which has no host pod of the run, and no metrics.k8s.io client",
	}
	if strings.Join(f.Evidence, "\n") != strings.Join(wantEv, "\n") {
		t.Errorf("evidence:\n%s\nwant:\n%s", strings.Join(f.Evidence, "\n"), strings.Join(wantEv, "\n"))
	}
	for _, s := range []string{"2 pod(s)", "30.0 mCPU and 150.0 MiB idle", "400.0 mCPU and 170.0 MiB under a 8-flow", "(10s samples)"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary %q lacks %q", f.Summary, s)
		}
	}

	// An error in the loaded sample only also leaves the pod out.
	f = footprintFinding(pods[:1], map[string]usage{"u1": {millicores: 1}}, map[string]usage{"u1": {err: "gone"}}, time.Second)
	if f.Verdict != "failed" || f.Summary != "none of the CNI's pods could be measured" || f.Metrics["cni_pods"] != 1 || f.Metrics["cni_pods_measured"] != 0 {
		t.Errorf("none measured: %+v", f)
	}
	if len(f.Evidence) != 1 || !strings.HasSuffix(f.Evidence[0], "not measured: gone") {
		t.Errorf("none measured: evidence %q", f.Evidence)
	}
	if _, ok := f.Metrics["cpu_millicores_idle"]; ok {
		t.Errorf("none measured: sums reported: %v", f.Metrics)
	}
}

// A pod that neither sample has (the agent's cgroup report listed no pod,
// e.g. its root was no cgroup filesystem and only the report's Error was
// set) must not be "measured" at 0 mCPU and 0 MiB.
func TestFootprintFindingPodWithoutSample(t *testing.T) {
	pods := []cni.PodRef{{Namespace: "kube-system", Name: "cilium-a", Node: "n1", UID: "u1"}}
	noFS := agent.CgroupReport{Schema: agent.SchemaCgroup, TimeUnixNano: 1, Pods: []agent.PodCgroup{}, Error: "/host/sys/fs/cgroup: no cgroup filesystem"}
	later := noFS
	later.TimeUnixNano = 2
	u := cgroupUsage(noFS, later)
	f := footprintFinding(pods, u, u, time.Second)
	if f.Verdict == "measured" {
		t.Errorf("a pod missing from both samples is %q at %v mCPU (summary %q)", f.Verdict, f.Metrics["cpu_millicores_idle"], f.Summary)
	}
	if f.Verdict != "failed" || len(f.Evidence) != 1 || !strings.Contains(f.Evidence[0], "not measured") {
		t.Errorf("finding %+v", f)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{HostPort: DefaultHostPort}
	tests := []struct {
		name string
		mod  func(*Options)
		err  string // prefix; "" : valid
	}{
		{name: "defaults", mod: func(*Options) {}},
		{name: "every check", mod: func(o *Options) { o.Checks = append([]string(nil), Checks...) }},
		{name: "none", mod: func(o *Options) { o.Checks = []string{"none"} }},
		{name: "unknown check", mod: func(o *Options) { o.Checks = []string{"mtu", "bogus"} },
			err: "--checks bogus: unknown check (known: cni, mtu, network_policy, encryption, cni_footprint, or none)"},
		{name: "none among others", mod: func(o *Options) { o.Checks = []string{"mtu", "none"} }, err: "--checks none: unknown check"},
		{name: "host port negative", mod: func(o *Options) { o.HostPort = -1 }, err: "--host-port -1: must be a free port between 1 and 65535 other than 12870"},
		{name: "host port too large", mod: func(o *Options) { o.HostPort = 65536 }, err: "--host-port 65536:"},
		{name: "host port is the servers' port", mod: func(o *Options) { o.HostPort = engine.DefaultPort }, err: "--host-port 12870:"},
		{name: "host port max", mod: func(o *Options) { o.HostPort = 65535 }},
		{name: "cni pods", mod: func(o *Options) { o.CNIPods = "kube-system/k8s-app=cilium" }},
		{name: "cni pods without namespace", mod: func(o *Options) { o.CNIPods = "k8s-app=cilium" }, err: `--cni-pods "k8s-app=cilium": must be NAMESPACE/LABEL=VALUE`},
		{name: "cni pods empty namespace", mod: func(o *Options) { o.CNIPods = "/k8s-app=cilium" }, err: "--cni-pods"},
		{name: "cni pods without value", mod: func(o *Options) { o.CNIPods = "kube-system/cilium" }, err: "--cni-pods"},
		{name: "footprint window negative", mod: func(o *Options) { o.FootprintWindow = -time.Second }, err: "--footprint-window -1s: must not be negative"},
		{name: "footprint window zero", mod: func(o *Options) { o.FootprintWindow = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.mod(&o)
			err := o.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
				t.Errorf("err = %v, want it to start with %q", err, tt.err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Errorf("error has several lines: %q", err)
			}
		})
	}
}

// Validate with --checks none must still check the other flags.
func TestOptionsValidateChecksNoneChecksTheRest(t *testing.T) {
	o := Options{Checks: []string{"none"}, HostPort: engine.DefaultPort}
	if err := o.Validate(); err == nil {
		t.Error("Options.Validate accepts --host-port 12870 with --checks none")
	} else if !strings.HasPrefix(err.Error(), "--host-port 12870") {
		t.Errorf("err = %v", err)
	}
}

func TestServiceArgs(t *testing.T) {
	args := serviceArgs("10.96.0.10", servicePort, httpPort)
	tests := []struct {
		test string
		args string
		why  bool
	}{
		{engine.TCPStream, "--service 10.96.0.10:12871", false},
		{engine.TCPRR, "--service 10.96.0.10:12871", false},
		{engine.TCPCRR, "--service 10.96.0.10:12871", false},
		{engine.HTTP, "--url http://10.96.0.10:8080/", false},
		{engine.UDPStream, "", true},
		{engine.UDPRR, "", true},
		{engine.ICMPEcho, "", true},
	}
	for _, tt := range tests {
		a, why := args(tt.test)
		if strings.Join(a, " ") != tt.args || (why != "") != tt.why {
			t.Errorf("%s: args %q why %q; want args %q, why: %v", tt.test, a, why, tt.args, tt.why)
		}
		if tt.why && !strings.HasPrefix(why, tt.test+" has no session-less service mode") {
			t.Errorf("%s: why %q", tt.test, why)
		}
	}
	// IPv6 service addresses are bracketed.
	if a, _ := serviceArgs("fd00::a", servicePort, httpPort)(engine.TCPRR); strings.Join(a, " ") != "--service [fd00::a]:12871" {
		t.Errorf("ipv6: %q", a)
	}
	if a, _ := serviceArgs("fd00::a", servicePort, httpPort)(engine.HTTP); strings.Join(a, " ") != "--url http://[fd00::a]:8080/" {
		t.Errorf("ipv6 http: %q", a)
	}
	// A NodePort path: the node's address, the service's node ports.
	if a, _ := serviceArgs("10.0.0.2", 31234, 31080)(engine.TCPCRR); strings.Join(a, " ") != "--service 10.0.0.2:31234" {
		t.Errorf("nodeport: %q", a)
	}
	if a, _ := serviceArgs("10.0.0.2", 31234, 31080)(engine.HTTP); strings.Join(a, " ") != "--url http://10.0.0.2:31080/" {
		t.Errorf("nodeport http: %q", a)
	}
}

func TestMedianOf(t *testing.T) {
	run := func(metric string, n int, median float64) result.Run {
		return result.Run{Summary: map[string]stats.Summary{metric: {N: n, Median: median}}}
	}
	m := result.ThroughputBitsPerSec
	tests := []struct {
		name string
		runs []result.Run
		want float64
	}{
		{"no runs", nil, 0},
		{"one run", []result.Run{run(m, 5, 9.4e9)}, 9.4e9},
		{"first run with the metric", []result.Run{run("latency_p50_us", 5, 30), run(m, 3, 1e9), run(m, 5, 2e9)}, 1e9},
		{"empty summary skipped", []result.Run{run(m, 0, 7), run(m, 2, 3)}, 3},
		{"no run has it", []result.Run{run("x", 1, 1), {}}, 0},
	}
	for _, tt := range tests {
		if got := medianOf(tt.runs, m); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The CNI check names the mode, labels the finding with the version and
// the mode, and keeps the evidence of the mode's settings.
func TestCheckCNI(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cni     cni.Info
		verdict string
		summary string
		labels  map[string]string
	}{
		{name: "cilium with mode",
			cni: cni.Info{Name: "cilium", Version: "v1.15.19", Mode: "tunnel vxlan, kube-proxy replacement, eBPF host routing",
				Settings: map[string]string{"routing-mode": "tunnel"},
				Evidence: []string{"cilium: 2 pods", "mode tunnel vxlan, kube-proxy replacement, eBPF host routing, from ConfigMap kube-system/cilium-config: routing-mode=tunnel"}},
			verdict: "identified", summary: "the cluster's CNI is cilium v1.15.19 (tunnel vxlan, kube-proxy replacement, eBPF host routing)",
			labels: map[string]string{"cni": "cilium", "cni_version": "v1.15.19", "cni_mode": "tunnel vxlan, kube-proxy replacement, eBPF host routing"}},
		{name: "flannel without version",
			cni:     cni.Info{Name: "flannel", Mode: "host-gw", Evidence: []string{"CNI config: plugins flannel"}},
			verdict: "identified", summary: "the cluster's CNI is flannel (host-gw)", labels: map[string]string{"cni": "flannel", "cni_mode": "host-gw"}},
		{name: "kindnet without mode",
			cni:     cni.Info{Name: "kindnet", Version: "v20240813", Evidence: []string{"mode unknown: cnibench does not read kindnet's configuration"}},
			verdict: "identified", summary: "the cluster's CNI is kindnet v20240813", labels: map[string]string{"cni": "kindnet", "cni_version": "v20240813"}},
		{name: "unknown", verdict: "unknown", summary: "the CNI could not be identified from the kube-system pods or the nodes' CNI configuration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &Deployment{b: &Backend{}, cni: tt.cni, client: &corev1.Node{}}
			f := d.checkCNI()
			if f.Verdict != tt.verdict || f.Summary != tt.summary || !maps.Equal(f.Labels, tt.labels) {
				t.Errorf("got %s %q %v, want %s %q %v", f.Verdict, f.Summary, f.Labels, tt.verdict, tt.summary, tt.labels)
			}
			if !slices.Equal(f.Evidence, tt.cni.Evidence) {
				t.Errorf("evidence %q, want %q", f.Evidence, tt.cni.Evidence)
			}
		})
	}
}
