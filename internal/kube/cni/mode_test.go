package cni

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// flannelCfg is kube-flannel-cfg as kube-flannel.yml creates it, with
// net-conf.json netConf.
func flannelCfg(ns, netConf string) *corev1.ConfigMap {
	return configMap(ns, "kube-flannel-cfg", map[string]string{
		"cni-conf.json": `{"name": "cbr0", "cniVersion": "0.3.1", "plugins": [{"type": "flannel", "delegate": {"hairpinMode": true, "isDefaultGateway": true}}, {"type": "portmap", "capabilities": {"portMappings": true}}]}`,
		"net-conf.json": netConf,
	})
}

// ciliumCfg is cilium-config in kube-system with data kv ("key=value",
// …) besides some settings of every install.
func ciliumCfg(kv ...string) *corev1.ConfigMap {
	data := map[string]string{"cluster-name": "default", "enable-ipv4": "true", "enable-ipv6": "false", "identity-allocation-mode": "crd"}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		data[k] = v
	}
	return configMap("kube-system", "cilium-config", data)
}

func TestDetectMode(t *testing.T) {
	tests := []struct {
		name     string
		cni      string
		objs     []runtime.Object
		mode     string
		settings map[string]string // nil: none
		evidence []string          // substrings of the evidence added, in order
	}{
		{name: "flannel vxlan", cni: "flannel",
			objs: []runtime.Object{flannelCfg("kube-flannel", `{"Network": "10.244.0.0/16", "EnableNFTables": false, "Backend": {"Type": "vxlan"}}`)},
			mode: "vxlan", settings: map[string]string{"backend": "vxlan", "network": "10.244.0.0/16"},
			evidence: []string{"mode vxlan, from ConfigMap kube-flannel/kube-flannel-cfg: backend=vxlan network=10.244.0.0/16"}},
		{name: "flannel host-gw in kube-system", cni: "flannel",
			objs: []runtime.Object{flannelCfg("kube-system", `{"Network": "10.244.0.0/16", "Backend": {"Type": "host-gw"}, "MTU": 1400}`)},
			mode: "host-gw", settings: map[string]string{"backend": "host-gw", "network": "10.244.0.0/16", "mtu": "1400"},
			evidence: []string{"mode host-gw, from ConfigMap kube-system/kube-flannel-cfg: backend=host-gw mtu=1400 network=10.244.0.0/16"}},
		{name: "flannel vxlan direct routing", cni: "flannel",
			objs: []runtime.Object{flannelCfg("kube-flannel", `{"network": "10.42.0.0/16", "backend": {"type": "VXLAN", "VNI": 4096, "Port": 4789, "DirectRouting": true}}`)},
			mode: "vxlan+directrouting", settings: map[string]string{"backend": "vxlan", "network": "10.42.0.0/16", "vni": "4096", "port": "4789", "direct_routing": "true"}},
		{name: "flannel wireguard", cni: "flannel",
			objs: []runtime.Object{flannelCfg("kube-flannel", `{"Network": "10.244.0.0/16", "Backend": {"Type": "wireguard", "PersistentKeepaliveInterval": 25}}`)},
			mode: "wireguard", settings: map[string]string{"backend": "wireguard", "network": "10.244.0.0/16"}},
		{name: "flannel without backend", cni: "flannel",
			objs: []runtime.Object{flannelCfg("kube-flannel", `{"Network": "10.244.0.0/16"}`)},
			mode: "udp", settings: map[string]string{"backend": "udp", "network": "10.244.0.0/16"},
			evidence: []string{"mode udp", "has no Backend: flannel's default, udp"}},
		{name: "flannel prefers kube-flannel", cni: "flannel",
			objs: []runtime.Object{flannelCfg("kube-system", `{"Backend": {"Type": "udp"}}`), flannelCfg("kube-flannel", `{"Backend": {"Type": "host-gw"}}`)},
			mode: "host-gw", settings: map[string]string{"backend": "host-gw"}},
		{name: "flannel malformed net-conf.json", cni: "flannel",
			objs:     []runtime.Object{flannelCfg("kube-flannel", `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"`)},
			evidence: []string{"mode unknown: ConfigMap kube-flannel/kube-flannel-cfg: net-conf.json: unexpected end of JSON input"}},
		{name: "flannel backend not an object", cni: "flannel",
			objs:     []runtime.Object{flannelCfg("kube-flannel", `{"Backend": "vxlan"}`)},
			evidence: []string{"mode unknown: ConfigMap kube-flannel/kube-flannel-cfg: net-conf.json: Backend: json: cannot unmarshal"}},
		{name: "flannel backend type empty", cni: "flannel",
			objs:     []runtime.Object{flannelCfg("kube-flannel", `{"Backend": {"VNI": 1}}`)},
			evidence: []string{`net-conf.json: Backend.Type "" is not a backend type`}},
		{name: "flannel without net-conf.json", cni: "flannel",
			objs:     []runtime.Object{configMap("kube-flannel", "kube-flannel-cfg", map[string]string{"cni-conf.json": "{}"})},
			evidence: []string{"mode unknown: ConfigMap kube-flannel/kube-flannel-cfg: no key net-conf.json"}},
		{name: "flannel ConfigMap missing", cni: "flannel",
			evidence: []string{"mode unknown: no ConfigMap kube-flannel-cfg in namespace kube-flannel or kube-system"}},

		{name: "cilium tunnel, KPR, bpf masquerade: eBPF host routing", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=tunnel", "tunnel-protocol=vxlan", "kube-proxy-replacement=true", "enable-bpf-masquerade=true",
				"enable-host-legacy-routing=false", "enable-policy=default", "ipam=kubernetes")},
			mode: "tunnel vxlan, kube-proxy replacement, eBPF host routing",
			settings: map[string]string{"routing-mode": "tunnel", "tunnel-protocol": "vxlan", "kube-proxy-replacement": "true", "enable-bpf-masquerade": "true",
				"enable-host-legacy-routing": "false", "enable-policy": "default", "ipam": "kubernetes"},
			evidence: []string{"mode tunnel vxlan, kube-proxy replacement, eBPF host routing, from ConfigMap kube-system/cilium-config: enable-bpf-masquerade=true enable-host-legacy-routing=false enable-policy=default ipam=kubernetes kube-proxy-replacement=true routing-mode=tunnel tunnel-protocol=vxlan",
				"cilium: eBPF host routing: enable-host-legacy-routing is not true, kube-proxy is replaced and enable-bpf-masquerade is true"}},
		{name: "cilium native, legacy host routing asked for", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=native", "kube-proxy-replacement=true", "enable-bpf-masquerade=true", "enable-host-legacy-routing=true")},
			mode:     "native routing, kube-proxy replacement, legacy host routing",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "enable-bpf-masquerade": "true", "enable-host-legacy-routing": "true"},
			evidence: []string{"mode native routing, kube-proxy replacement, legacy host routing", "cilium: legacy host routing: enable-host-legacy-routing is true (eBPF host routing needs"}},
		{name: "cilium without KPR", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=native", "kube-proxy-replacement=false", "enable-bpf-masquerade=true")},
			mode:     "native routing, kube-proxy, legacy host routing",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "false", "enable-bpf-masquerade": "true"},
			evidence: []string{`cilium: legacy host routing: kube-proxy-replacement is "false", not true (`}},
		{name: "cilium KPR without bpf masquerade", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=tunnel", "tunnel-protocol=geneve", "kube-proxy-replacement=true")},
			mode:     "tunnel geneve, kube-proxy replacement, legacy host routing",
			settings: map[string]string{"routing-mode": "tunnel", "tunnel-protocol": "geneve", "kube-proxy-replacement": "true"},
			evidence: []string{"cilium: legacy host routing: enable-bpf-masquerade is not set, not true ("}},
		{name: "cilium defaults", cni: "cilium",
			objs: []runtime.Object{ciliumCfg()}, mode: "tunnel vxlan, kube-proxy, legacy host routing", settings: map[string]string{},
			evidence: []string{"mode tunnel vxlan, kube-proxy, legacy host routing, from ConfigMap kube-system/cilium-config: nothing",
				"cilium: neither routing-mode nor tunnel set: cilium's default, tunnel vxlan",
				"cilium: legacy host routing: kube-proxy-replacement is not set, not true; enable-bpf-masquerade is not set, not true"}},
		{name: "cilium 1.13: tunnel disabled, KPR strict, wireguard", cni: "cilium",
			objs: []runtime.Object{configMap("cilium", "cilium-config", map[string]string{"tunnel": "disabled", "kube-proxy-replacement": "strict",
				"enable-bpf-masquerade": "true", "enable-wireguard": "true"})},
			mode:     "native routing, kube-proxy replacement, eBPF host routing, wireguard",
			settings: map[string]string{"tunnel": "disabled", "kube-proxy-replacement": "strict", "enable-bpf-masquerade": "true", "enable-wireguard": "true"},
			evidence: []string{"from ConfigMap cilium/cilium-config"}},
		{name: "cilium 1.13: tunnel geneve, KPR partial, ipsec", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("tunnel=geneve", "kube-proxy-replacement=partial", "enable-bpf-masquerade=true", "enable-ipsec=true")},
			mode:     "tunnel geneve, partial kube-proxy replacement, legacy host routing, ipsec",
			settings: map[string]string{"tunnel": "geneve", "kube-proxy-replacement": "partial", "enable-bpf-masquerade": "true", "enable-ipsec": "true"},
			evidence: []string{`kube-proxy-replacement is "partial", not true`}},
		{name: "cilium unknown values", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=hybrid", "kube-proxy-replacement=maybe")},
			mode:     "routing unknown, kube-proxy replacement unknown, legacy host routing",
			settings: map[string]string{"routing-mode": "hybrid", "kube-proxy-replacement": "maybe"},
			evidence: []string{`cilium: routing-mode "hybrid" is neither tunnel nor native`, `cilium: kube-proxy-replacement "maybe" is none of`}},
		// The keys the local cluster's cilium120-* (Cilium 1.20.2, the same
		// ConfigMap as 1.15's cilium-*) and 1.20's chart write.
		{name: "cilium 1.20 local cluster: vxlan", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=tunnel", "tunnel-protocol=vxlan", "kube-proxy-replacement=true", "enable-host-legacy-routing=false",
				"enable-bpf-masquerade=true", "enable-ipv4-masquerade=true", "enable-policy=default", "enable-wireguard=false", "ipam=kubernetes")},
			mode: "tunnel vxlan, kube-proxy replacement, eBPF host routing",
			settings: map[string]string{"routing-mode": "tunnel", "tunnel-protocol": "vxlan", "kube-proxy-replacement": "true", "enable-host-legacy-routing": "false",
				"enable-bpf-masquerade": "true", "enable-policy": "default", "enable-wireguard": "false", "ipam": "kubernetes"}},
		{name: "cilium 1.20 local cluster: native", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=native", "ipv4-native-routing-cidr=10.244.0.0/16", "auto-direct-node-routes=true", "kube-proxy-replacement=true",
				"enable-host-legacy-routing=false", "enable-bpf-masquerade=true", "enable-wireguard=false")},
			mode:     "native routing, kube-proxy replacement, eBPF host routing",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "enable-host-legacy-routing": "false", "enable-bpf-masquerade": "true", "enable-wireguard": "false"}},
		{name: "cilium 1.20 local cluster: native-legacy", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=native", "auto-direct-node-routes=true", "kube-proxy-replacement=true",
				"enable-host-legacy-routing=true", "enable-bpf-masquerade=true", "enable-wireguard=false")},
			mode:     "native routing, kube-proxy replacement, legacy host routing",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "enable-host-legacy-routing": "true", "enable-bpf-masquerade": "true", "enable-wireguard": "false"}},
		{name: "cilium 1.20 local cluster: native-kube-proxy", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=native", "auto-direct-node-routes=true", "kube-proxy-replacement=false",
				"enable-host-legacy-routing=true", "enable-bpf-masquerade=false", "enable-wireguard=false")},
			mode:     "native routing, kube-proxy, legacy host routing",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "false", "enable-host-legacy-routing": "true", "enable-bpf-masquerade": "false", "enable-wireguard": "false"}},
		{name: "cilium 1.20 chart defaults", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=tunnel", "tunnel-protocol=vxlan", "kube-proxy-replacement=false", "enable-ipv4-masquerade=true",
				"enable-policy=default", "ipam=cluster-pool")},
			mode:     "tunnel vxlan, kube-proxy, legacy host routing",
			settings: map[string]string{"routing-mode": "tunnel", "tunnel-protocol": "vxlan", "kube-proxy-replacement": "false", "enable-policy": "default", "ipam": "cluster-pool"},
			evidence: []string{`cilium: legacy host routing: kube-proxy-replacement is "false", not true; enable-bpf-masquerade is not set, not true (`}},
		{name: "cilium 1.20 netkit, ztunnel", cni: "cilium",
			objs: []runtime.Object{ciliumCfg("routing-mode=native", "kube-proxy-replacement=true", "enable-bpf-masquerade=true", "datapath-mode=netkit",
				"enable-ztunnel=true")},
			mode:     "native routing, kube-proxy replacement, eBPF host routing, ztunnel, netkit",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "enable-bpf-masquerade": "true", "datapath-mode": "netkit", "enable-ztunnel": "true"}},
		{name: "cilium 1.20 netkit-l2, geneve", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=tunnel", "tunnel-protocol=geneve", "kube-proxy-replacement=true", "enable-bpf-masquerade=true", "datapath-mode=netkit-l2")},
			mode:     "tunnel geneve, kube-proxy replacement, eBPF host routing, netkit-l2",
			settings: map[string]string{"routing-mode": "tunnel", "tunnel-protocol": "geneve", "kube-proxy-replacement": "true", "enable-bpf-masquerade": "true", "datapath-mode": "netkit-l2"}},
		{name: "cilium datapath-mode veth", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=native", "kube-proxy-replacement=true", "enable-bpf-masquerade=true", "datapath-mode=veth")},
			mode:     "native routing, kube-proxy replacement, eBPF host routing",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "enable-bpf-masquerade": "true", "datapath-mode": "veth"}},
		{name: "cilium datapath-mode auto", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=native", "kube-proxy-replacement=true", "enable-bpf-masquerade=true", "datapath-mode=auto")},
			mode:     "native routing, kube-proxy replacement, eBPF host routing, netkit or veth",
			settings: map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true", "enable-bpf-masquerade": "true", "datapath-mode": "auto"},
			evidence: []string{"cilium: datapath-mode auto: netkit where the kernel has it"}},
		{name: "cilium datapath-mode unknown", cni: "cilium",
			objs:     []runtime.Object{ciliumCfg("routing-mode=native", "datapath-mode=ipvlan")},
			mode:     "native routing, kube-proxy, legacy host routing, datapath mode unknown",
			settings: map[string]string{"routing-mode": "native", "datapath-mode": "ipvlan"},
			evidence: []string{`cilium: datapath-mode "ipvlan" is none of veth, netkit, netkit-l2, auto`}},
		{name: "cilium ConfigMap missing", cni: "cilium",
			objs:     []runtime.Object{flannelCfg("kube-flannel", `{"Backend": {"Type": "vxlan"}}`)},
			evidence: []string{"mode unknown: no ConfigMap cilium-config in namespace kube-system or cilium"}},

		{name: "calico veth_mtu", cni: "calico",
			objs:     []runtime.Object{configMap("kube-system", "calico-config", map[string]string{"calico_backend": "bird", "veth_mtu": "1440", "typha_service_name": "none"})},
			settings: map[string]string{"veth_mtu": "1440"},
			evidence: []string{"mode unknown, from ConfigMap kube-system/calico-config: veth_mtu=1440", "calico: the mode (encapsulation, BGP, eBPF dataplane) is in the Installation resource"}},
		{name: "calico operator install", cni: "calico",
			evidence: []string{"mode unknown: no ConfigMap calico-config in namespace kube-system or calico-system"}},
		{name: "calico malformed veth_mtu", cni: "calico",
			objs:     []runtime.Object{configMap("kube-system", "calico-config", map[string]string{"veth_mtu": "auto"})},
			evidence: []string{`mode unknown: ConfigMap kube-system/calico-config: veth_mtu "auto" is not a number`}},

		{name: "other CNI", cni: "kindnet", evidence: []string{"mode unknown: cnibench does not read kindnet's configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := Info{Name: tt.cni, Version: "v1", Evidence: []string{"pods"}}
			DetectMode(context.Background(), fake.NewClientset(tt.objs...), &info)
			if info.Mode != tt.mode {
				t.Errorf("mode %q, want %q (evidence %q)", info.Mode, tt.mode, info.Evidence)
			}
			if (info.Settings == nil) != (tt.settings == nil) || !maps.Equal(info.Settings, tt.settings) {
				t.Errorf("settings %v, want %v", info.Settings, tt.settings)
			}
			if info.Name != tt.cni || info.Version != "v1" || len(info.Evidence) < 2 || info.Evidence[0] != "pods" {
				t.Errorf("info %+v: name, version or evidence of Identify changed, or no evidence added", info)
			}
			i := 0
			for _, e := range info.Evidence[1:] {
				if i < len(tt.evidence) && strings.Contains(e, tt.evidence[i]) {
					i++
				}
			}
			if i < len(tt.evidence) {
				t.Errorf("evidence %q lacks %q", info.Evidence[1:], tt.evidence[i])
			}
		})
	}
}

// A CNI that could not be named gets no mode and no evidence about it.
func TestDetectModeNoName(t *testing.T) {
	for _, name := range []string{"", "unknown"} {
		info := Info{Name: name}
		DetectMode(context.Background(), fake.NewClientset(), &info)
		if info.Mode != "" || info.Settings != nil || info.Evidence != nil {
			t.Errorf("info %+v", info)
		}
	}
}

// Errors of the API server are evidence, not failures; a hanging one is
// cut off by the deadline.
func TestDetectModeErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tt := range []struct {
		name     string
		err      error
		hang     bool
		evidence string
	}{
		{name: "forbidden", err: apierrors.NewForbidden(gr, "cilium-config", errors.New("no RBAC")),
			evidence: "mode unknown: reading ConfigMap kube-system/cilium-config is forbidden (cnibench needs get on configmaps there): "},
		{name: "server error", err: apierrors.NewInternalError(errors.New("etcd down")),
			evidence: "mode unknown: read ConfigMap kube-system/cilium-config: Internal error occurred: etcd down"},
		{name: "deadline", hang: true, evidence: "mode unknown: read ConfigMap kube-system/cilium-config: context deadline exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(ciliumCfg("routing-mode=native"))
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tt.hang {
					<-ctx.Done()
					return true, nil, ctx.Err()
				}
				return true, nil, tt.err
			})
			info := Info{Name: "cilium"}
			DetectMode(ctx, cs, &info)
			if info.Mode != "" || info.Settings != nil || len(info.Evidence) != 1 || !strings.HasPrefix(info.Evidence[0], tt.evidence) {
				t.Errorf("info %+v, want evidence %q", info, tt.evidence)
			}
		})
	}
}

func TestFormatSettings(t *testing.T) {
	got := formatSettings(map[string]string{"b": "two words", "a": "1", "c": "", "d": `x"y`})
	if want := `a=1 b="two words" c="" d="x\"y"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if formatSettings(nil) != "" {
		t.Error("nil settings")
	}
}

func TestClip(t *testing.T) {
	if clip("  vxlan ") != "vxlan" {
		t.Error("not trimmed")
	}
	long := strings.Repeat("é", 40) // 80 bytes
	c := clip(long)
	if len(c) > 64 || !strings.HasSuffix(c, "…") || !strings.HasPrefix(long, strings.TrimSuffix(c, "…")) {
		t.Errorf("clip = %q", c)
	}
}

// modeChars is what a flannel mode may hold: it becomes a label.
var modeChars = regexp.MustCompile(`^[a-z0-9][a-z0-9_.+-]*$`)

func FuzzParseFlannelNetConf(f *testing.F) {
	for _, s := range []string{
		`{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`,
		`{"Network": "10.244.0.0/16", "Backend": {"Type": "host-gw"}, "MTU": 1400}`,
		`{"Network": "10.42.0.0/16", "Backend": {"Type": "vxlan", "VNI": 1, "Port": 8472, "DirectRouting": true}, "MTU": "1450"}`,
		`{"EnableIPv6": true, "IPv6Network": "fd00::/56", "Backend": {"Type": "wireguard"}}`,
		`{"Network": "10.244.0.0/16"}`,
		`{"Backend": null}`,
		`{"Backend": "vxlan"}`,
		`{"Backend": {"Type": "vxlan"`,
		`[]`, `null`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mode, set, _, err := parseFlannelNetConf(s)
		if err != nil {
			if mode != "" || set != nil {
				t.Fatalf("error %v with mode %q settings %v", err, mode, set)
			}
			return
		}
		if !modeChars.MatchString(mode) || set["backend"] == "" || !strings.HasPrefix(mode, set["backend"]) {
			t.Fatalf("mode %q settings %v", mode, set)
		}
		for k, v := range set {
			if len(v) > 64 {
				t.Fatalf("setting %s too long: %q", k, v)
			}
		}
	})
}

func TestCalicoAgentMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		env  map[string]string
		mode string
		ev   string
	}{
		{"calico-vxlan.yaml, iptables", map[string]string{"calico_backend": "vxlan", "veth_mtu": "0"},
			map[string]string{"CALICO_NETWORKING_BACKEND": "vxlan", "CALICO_IPV4POOL_VXLAN": "Always", "CALICO_IPV4POOL_IPIP": "Never", "FELIX_NFTABLESMODE": "Disabled"},
			"vxlan, iptables dataplane", "the IP pools and FelixConfiguration themselves are not read"},
		{"nftables", nil, map[string]string{"CALICO_NETWORKING_BACKEND": "vxlan", "CALICO_IPV4POOL_VXLAN": "Always", "FELIX_NFTABLESMODE": "Enabled"},
			"vxlan, nftables dataplane", ""},
		{"calico.yaml: BGP with IPIP, eBPF", map[string]string{"calico_backend": "bird"},
			map[string]string{"CALICO_IPV4POOL_IPIP": "Always", "FELIX_BPFENABLED": "true"}, "ipip, eBPF dataplane", ""},
		{"BGP, no encapsulation", nil, map[string]string{"CALICO_NETWORKING_BACKEND": "bird", "CALICO_IPV4POOL_IPIP": "Never", "CALICO_IPV4POOL_VXLAN": "Never"},
			"bgp without encapsulation, felix's default dataplane", "neither FELIX_BPFENABLED nor FELIX_NFTABLESMODE set"},
		// hack/local-cluster's calico-bgp and calico-ebpf (calico.yaml and calico-bpf.yaml without
		// IPIP): the backend from calico-config, resolved; eBPF before FELIX_NFTABLESMODE
		{"calico-bgp", map[string]string{"calico_backend": "bird", "veth_mtu": "0"},
			map[string]string{"CALICO_NETWORKING_BACKEND": "bird", "CALICO_IPV4POOL_VXLAN": "Never", "CALICO_IPV4POOL_IPIP": "Never", "FELIX_NFTABLESMODE": "Disabled"},
			"bgp without encapsulation, iptables dataplane", ""},
		{"calico-ebpf", map[string]string{"calico_backend": "bird", "veth_mtu": "0"},
			map[string]string{"CALICO_NETWORKING_BACKEND": "bird", "CALICO_IPV4POOL_VXLAN": "Never", "CALICO_IPV4POOL_IPIP": "Never", "FELIX_NFTABLESMODE": "Disabled", "FELIX_BPFENABLED": "true"},
			"bgp without encapsulation, eBPF dataplane", ""},
		{"backend only in calico-config", map[string]string{"calico_backend": "bird"},
			map[string]string{"CALICO_IPV4POOL_VXLAN": "Never", "CALICO_IPV4POOL_IPIP": "Never", "FELIX_BPFENABLED": "TRUE"},
			"bgp without encapsulation, eBPF dataplane", ""},
		{"cross-subnet, case-insensitive", nil, map[string]string{"CALICO_IPV4POOL_VXLAN": "crosssubnet", "FELIX_NFTABLESMODE": "auto"},
			"vxlan cross-subnet, nftables or iptables dataplane (felix's auto)", ""},
		{"policy only", nil, map[string]string{"CALICO_NETWORKING_BACKEND": "none", "FELIX_NFTABLESMODE": "Disabled"}, "policy only, iptables dataplane", ""},
		{"nothing said", nil, map[string]string{}, "encapsulation unknown, felix's default dataplane", "the IP pool's encapsulation is not in"},
	} {
		mode, set, ev, err := calicoAgentMode(tc.data, tc.env, "kube-system/calico-node-x")
		if err != nil || mode != tc.mode {
			t.Errorf("%s: mode %q, %v; want %q", tc.name, mode, err, tc.mode)
		}
		for k, v := range tc.env {
			if set[k] != v {
				t.Errorf("%s: settings %v lack %s=%s", tc.name, set, k, v)
			}
		}
		if tc.ev != "" && !strings.Contains(strings.Join(ev, "\n"), tc.ev) {
			t.Errorf("%s: evidence %q lacks %q", tc.name, ev, tc.ev)
		}
	}
	if _, _, _, err := calicoAgentMode(map[string]string{"veth_mtu": "auto"}, nil, "p"); err == nil {
		t.Error("a malformed veth_mtu is not an error")
	}
}

// Canal: flannel's backend from canal-config's net-conf.json, its
// veth_mtu (the pods' MTU; 0 said to be the host's in policy-only mode),
// felix's dataplane from calico-node's environment (the manifest's sets
// none: felix's default).
func TestCanalMode(t *testing.T) {
	netConf := `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`
	manifestEnv := map[string]string{"CALICO_NETWORKING_BACKEND": "none", "CLUSTER_TYPE": "k8s,canal", "FELIX_IPTABLESREFRESHINTERVAL": "60"}
	for _, tc := range []struct {
		name string
		data map[string]string
		env  map[string]string // nil: canalMode (no agent found)
		mode string
		set  map[string]string
		ev   string
	}{
		{"canal.yaml as it is", map[string]string{"net-conf.json": netConf, "veth_mtu": "0", "canal_iface": "", "masquerade": "true"}, manifestEnv,
			"flannel vxlan, calico policy, felix's default dataplane",
			map[string]string{"backend": "vxlan", "network": "10.244.0.0/16", "veth_mtu": "0", "CALICO_NETWORKING_BACKEND": "none"},
			"in policy-only mode is the host interface's"},
		{"veth_mtu set, nftables", map[string]string{"net-conf.json": netConf, "veth_mtu": " 1450 "},
			map[string]string{"CALICO_NETWORKING_BACKEND": "none", "FELIX_NFTABLESMODE": "Enabled"},
			"flannel vxlan, calico policy, nftables dataplane", map[string]string{"veth_mtu": "1450", "FELIX_NFTABLESMODE": "Enabled"}, ""},
		{"host-gw, no veth_mtu, no agent", map[string]string{"net-conf.json": `{"Network": "10.42.0.0/16", "Backend": {"Type": "host-gw"}}`}, nil,
			"flannel host-gw, calico policy", map[string]string{"backend": "host-gw", "network": "10.42.0.0/16"}, ""},
		{"no net-conf.json", map[string]string{"veth_mtu": "1450"}, manifestEnv, "", nil, "no net-conf.json in canal-config"},
	} {
		var mode string
		var set map[string]string
		var ev []string
		var err error
		if tc.env == nil {
			mode, set, ev, err = canalMode(tc.data)
		} else {
			mode, set, ev, err = canalAgentMode(tc.data, tc.env, "kube-system/canal-x")
		}
		if err != nil || mode != tc.mode {
			t.Errorf("%s: mode %q, %v; want %q", tc.name, mode, err, tc.mode)
		}
		for k, v := range tc.set {
			if set[k] != v {
				t.Errorf("%s: settings %v: %s=%q, want %q", tc.name, set, k, set[k], v)
			}
		}
		if tc.set == nil && set != nil {
			t.Errorf("%s: settings %v, want none", tc.name, set)
		}
		if _, ok := set["veth_mtu"]; ok && tc.data["veth_mtu"] == "" {
			t.Errorf("%s: veth_mtu %q set without one in canal-config", tc.name, set["veth_mtu"])
		}
		if got := strings.Join(ev, "\n"); tc.ev != "" && !strings.Contains(got, tc.ev) {
			t.Errorf("%s: evidence %q lacks %q", tc.name, ev, tc.ev)
		} else if tc.ev == "" && strings.Contains(got, "policy-only mode is the host") {
			t.Errorf("%s: evidence %q speaks of veth_mtu 0", tc.name, ev)
		}
	}
	for _, bad := range []map[string]string{
		{"net-conf.json": `{"Backend": `, "veth_mtu": "1450"},
		{"net-conf.json": netConf, "veth_mtu": "auto"},
	} {
		if _, _, _, err := canalMode(bad); err == nil {
			t.Errorf("canal-config %v: no error", bad)
		}
		if _, _, _, err := canalAgentMode(bad, manifestEnv, "p"); err == nil {
			t.Errorf("canal-config %v with the agent: no error", bad)
		}
	}
}

// From the pods' list to the mode: calico-node's environment, a value
// taken from calico-config resolved; Canal's flannel backend with felix's
// dataplane.
func TestDetectCalicoAndCanalMode(t *testing.T) {
	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "calico-config"}, Key: key}}
	}
	pod := func(name, label string, env []corev1.EnvVar, containers ...string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, Labels: map[string]string{"k8s-app": label}}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "quay.io/calico/node:v3.31.0", Env: env})
		}
		return p
	}
	calicoEnv := []corev1.EnvVar{{Name: "CALICO_NETWORKING_BACKEND", ValueFrom: ref("calico_backend")}, {Name: "CALICO_IPV4POOL_VXLAN", Value: "Always"},
		{Name: "FELIX_NFTABLESMODE", Value: "Enabled"}, {Name: "NODENAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		objs []runtime.Object
		cni  string
		mode string
	}{
		{"calico", []corev1.Pod{pod("calico-node-b", "calico-node", calicoEnv, "calico-node"), pod("calico-node-a", "calico-node", calicoEnv, "calico-node")},
			[]runtime.Object{configMap("kube-system", "calico-config", map[string]string{"calico_backend": "vxlan", "veth_mtu": "0"})},
			"calico", "vxlan, nftables dataplane"},
		{"canal", []corev1.Pod{pod("canal-x", "canal", []corev1.EnvVar{{Name: "CALICO_NETWORKING_BACKEND", Value: "none"}}, "calico-node", "kube-flannel")},
			[]runtime.Object{configMap("kube-system", "canal-config", map[string]string{"net-conf.json": `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`})},
			"canal", "flannel vxlan, calico policy, felix's default dataplane"},
		{"calico without its ConfigMap's value", []corev1.Pod{pod("calico-node-a", "calico-node", calicoEnv, "calico-node")},
			[]runtime.Object{configMap("kube-system", "calico-config", map[string]string{})},
			"calico", "vxlan, nftables dataplane"},
	} {
		info := Identify(tc.pods, nil)
		if info.Name != tc.cni || info.agent == nil {
			t.Fatalf("%s: identified %q, agent %v", tc.name, info.Name, info.agent)
		}
		if tc.name == "calico" && info.agent.pod != "kube-system/calico-node-a" {
			t.Errorf("agent %s, want the first pod by name", info.agent.pod)
		}
		DetectMode(context.Background(), fake.NewClientset(tc.objs...), &info)
		if info.Mode != tc.mode {
			t.Errorf("%s: mode %q, want %q (evidence %q)", tc.name, info.Mode, tc.mode, info.Evidence)
		}
		if !strings.Contains(strings.Join(info.Evidence, "\n"), "'s environment") {
			t.Errorf("%s: evidence %q does not name the environment read", tc.name, info.Evidence)
		}
	}
}
