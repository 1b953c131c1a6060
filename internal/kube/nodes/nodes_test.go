package nodes

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func TestSelectNodes(t *testing.T) {
	cp := node("cp", controlPlane, taint(ControlPlaneLabel, corev1.TaintEffectNoSchedule))
	cpOpen := node("cp", controlPlane)
	w1, w2, w3 := node("w1"), node("w2", label("node-role", "bench")), node("w3", label("node-role", "bench"))
	bad := []runtime.Object{cp, node("w1"), node("w2", notReady), node("w3", cordoned), node("w4", taint("gpu", corev1.TaintEffectNoExecute))}
	tests := []struct {
		name           string
		nodes          []runtime.Object
		choice         Choice
		client, server string
		err            []string // substrings of the error
		notErr         []string // not in the error
	}{
		{name: "auto", nodes: []runtime.Object{w3, cp, w2, w1}, client: "w1", server: "w2"},
		{name: "auto prefers workers", nodes: []runtime.Object{cpOpen, w2}, client: "w2", server: "cp"},
		{name: "client named", nodes: []runtime.Object{w3, cp, w2, w1}, choice: Choice{Client: "w3"}, client: "w3", server: "w1"},
		{name: "server named", nodes: []runtime.Object{w3, cp, w2, w1}, choice: Choice{Server: "w1"}, client: "w2", server: "w1"},
		{name: "both named", nodes: []runtime.Object{w3, cp, w2, w1}, choice: Choice{Client: "w2", Server: "w3"}, client: "w2", server: "w3"},
		{name: "named tainted NoSchedule", nodes: []runtime.Object{cp, w1}, choice: Choice{Server: "cp"}, client: "w1", server: "cp"},
		// w2's servers counted from w2 in node order: w3 first.
		{name: "client selector", nodes: []runtime.Object{w3, cp, w2, w1}, choice: Choice{Client: "node-role=bench"}, client: "w2", server: "w3"},
		{name: "both selectors", nodes: []runtime.Object{w3, cp, w2, w1}, choice: Choice{Client: "node-role=bench", Server: "node-role=bench"}, client: "w2", server: "w3"},
		{name: "too few usable", nodes: bad,
			err: []string{"1 of 5 nodes usable", "cp tainted node-role.kubernetes.io/control-plane:NoSchedule", "w2 not Ready", "w3 cordoned", "w4 tainted gpu:NoExecute", "--client-node/--server-node", "to use tainted nodes pass --tolerations with their taints (e.g. --tolerations gpu:NoExecute)"}},
		{name: "no nodes", err: []string{"0 of 0 nodes usable"}},
		// Ready, but the node controller has not yet lifted its taint: wait, do not tolerate.
		{name: "condition taint", nodes: []runtime.Object{w1, node("w2", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute))},
			err:    []string{"1 of 2 nodes usable", "w2 under node-condition taint node.kubernetes.io/not-ready:NoExecute", "wait until it clears"},
			notErr: []string{"--tolerations"}},
		{name: "same name", nodes: []runtime.Object{w1, w2}, choice: Choice{Client: "w1", Server: "w1"}, err: []string{"must run on different nodes"}},
		{name: "unknown name", nodes: []runtime.Object{w1, w2}, choice: Choice{Client: "nope"}, err: []string{`--client-node "nope": no such node`}},
		{name: "named not ready", nodes: bad, choice: Choice{Server: "w2"}, err: []string{`--server-node "w2": node is not Ready`}},
		{name: "named NoExecute", nodes: bad, choice: Choice{Server: "w4"}, err: []string{`node is tainted gpu:NoExecute`}},
		{name: "selector matches none usable", nodes: bad, choice: Choice{Client: "kubernetes.io/hostname=w2"}, err: []string{`no usable node matches (1 nodes match`}},
		{name: "bad selector", nodes: bad, choice: Choice{Client: "a=b=c"}, err: []string{"invalid label selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, o := range tt.nodes {
				objs = append(objs, o.DeepCopyObject())
			}
			c, s, err := selectNodes(context.Background(), fake.NewClientset(objs...), tt.choice)
			if tt.err != nil {
				if err == nil {
					t.Fatalf("got %s/%s, want error", c.Name, s.Name)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error has several lines: %q", err)
				}
				for _, want := range tt.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				for _, bad := range tt.notErr {
					if strings.Contains(err.Error(), bad) {
						t.Errorf("error %q has %q", err, bad)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.client || s.Name != tt.server {
				t.Errorf("got client %s server %s, want %s %s", c.Name, s.Name, tt.client, tt.server)
			}
		})
	}
}

func TestNodeInternalIP(t *testing.T) {
	addrs := func(a ...corev1.NodeAddress) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Addresses: a}}
	}
	ext := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}
	v6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::1"}
	v4 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}
	for _, tt := range []struct {
		n    *corev1.Node
		want string
	}{
		{addrs(), ""},
		{addrs(ext), ""},
		{addrs(ext, v4), "10.0.0.1"},
		{addrs(v6, v4), "10.0.0.1"},
		{addrs(v6), "fd00::1"},
	} {
		if got := InternalIP(tt.n); got != tt.want {
			t.Errorf("InternalIP(%v) = %q, want %q", tt.n.Status.Addresses, got, tt.want)
		}
	}
}

func zone(z string) func(*corev1.Node) { return label(corev1.LabelTopologyZone, z) }
func linux(arch string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Labels[corev1.LabelOSStable] = "linux"
		n.Labels[corev1.LabelArchStable] = arch
	}
}
func taintKV(key, value string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// pairString writes pairs as "c>s c>s*" (* marks a reuse).
func pairString(ps []Pair) string {
	var out []string
	for _, p := range ps {
		s := p.Client.Name + ">" + p.Server.Name
		if p.Reuse {
			s += "*"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestSelectPairs(t *testing.T) {
	amd := linux("amd64")
	a1, a2, a3 := node("a1", amd, zone("za")), node("a2", amd, zone("za")), node("a3", amd, zone("za"))
	b1, b2 := node("b1", amd, zone("zb")), node("b2", amd, zone("zb"))
	legacy := node("l1", amd, label(corev1.LabelFailureDomainBetaZone, "za"))
	u1, u2 := node("u1", amd), node("u2", amd)
	bare := node("n1")
	s390 := node("s1", linux("s390x"), zone("za"))
	win := node("win1", amd, zone("za"), label(corev1.LabelOSStable, "windows"))
	dedicated := node("d1", amd, zone("za"), taintKV("dedicated", "bench", corev1.TaintEffectNoSchedule), taintKV("evict", "", corev1.TaintEffectNoExecute))
	soft := node("p1", amd, zone("za"), taintKV("soft", "", corev1.TaintEffectPreferNoSchedule))
	tolerateAll := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "bench", Effect: corev1.TaintEffectNoSchedule}, {Key: "evict", Operator: corev1.TolerationOpExists}}
	objs := func(ns ...*corev1.Node) []runtime.Object {
		var out []runtime.Object
		for _, n := range ns {
			out = append(out, n.DeepCopy())
		}
		return out
	}
	tests := []struct {
		name   string
		nodes  []runtime.Object
		choice Choice
		pl     Placement
		n      int
		want   string   // pairString
		zones  string   // first pair's "client-zone/server-zone"
		notes  []string // substrings of the first pair's notes
		err    []string // substrings of the error
	}{
		{name: "ring of three", nodes: objs(a3, a1, a2), n: 7, want: "a1>a2 a2>a3 a3>a1 a1>a3 a2>a1 a3>a2 a1>a2*", zones: "za/za"},
		{name: "two nodes reuse", nodes: objs(a1, a2), n: 4, want: "a1>a2 a2>a1 a1>a2* a2>a1*"},
		{name: "same zone default", nodes: objs(a1, b1, a2, b2), n: 4, want: "a1>a2 a2>a1 b1>b2 b2>b1"},
		{name: "same zone skips a lone node", nodes: objs(a1, b1, a2), n: 3, want: "a1>a2 a2>a1 a1>a2*"},
		{name: "legacy zone label", nodes: objs(a1, legacy, b1), n: 1, want: "a1>l1", zones: "za/za"},
		{name: "cross zone", nodes: objs(a1, a2, b1), pl: Placement{Zone: ZoneCross}, n: 4, want: "a1>b1 a2>b1 b1>a1 b1>a2", zones: "za/zb"},
		{name: "any zone", nodes: objs(a1, b1), pl: Placement{Zone: ZoneAny}, n: 1, want: "a1>b1", zones: "za/zb"},
		{name: "unknown zone is one zone", nodes: objs(u1, u2), n: 1, want: "u1>u2", zones: "/",
			notes: []string{"node u1 has no topology.kubernetes.io/zone label: zone unknown", "--placement same-zone: the nodes without a zone label count as one unknown zone"}},
		{name: "unknown zone against known, cross", nodes: objs(a1, u1), pl: Placement{Zone: ZoneCross}, n: 1, want: "a1>u1", zones: "za/", notes: []string{"node u1 has no topology.kubernetes.io/zone label"}},
		{name: "missing os and arch labels noted", nodes: objs(bare, u1), n: 1, want: "n1>u1",
			notes: []string{"node n1 has no kubernetes.io/os label: assumed linux", "node n1 has no kubernetes.io/arch label: assumed to be one of amd64, arm64"}},
		{name: "client named, same zone", nodes: objs(a1, a2, b1, b2), choice: Choice{Client: "b2"}, n: 2, want: "b2>b1 b2>b1*"},
		{name: "server selector, ring", nodes: objs(a1, a2, a3), choice: Choice{Server: "kubernetes.io/hostname!=a3"}, n: 4, want: "a1>a2 a2>a1 a3>a1 a3>a2"},
		{name: "arch filter", nodes: objs(a1, s390, a2), n: 1, want: "a1>a2"},
		{name: "arches given", nodes: objs(a1, s390), pl: Placement{Arches: []string{"amd64", "s390x"}}, n: 1, want: "a1>s1"},
		{name: "tolerated taints", nodes: objs(a1, dedicated), pl: Placement{Tolerations: tolerateAll}, n: 2, want: "a1>d1 d1>a1"},
		{name: "PreferNoSchedule ignored", nodes: objs(a1, soft), n: 1, want: "a1>p1"},

		{name: "untolerated taint", nodes: objs(a1, dedicated), pl: Placement{Tolerations: tolerateAll[:1]}, n: 1,
			err: []string{"1 of 2 nodes usable", "d1 tainted evict:NoExecute", "--client-node/--server-node"}},
		{name: "wrong arch and os", nodes: objs(a1, s390, win), n: 1,
			err: []string{"s1 arch s390x: the image has no such platform (it has amd64, arm64)", "win1 os windows: the image is linux only"}},
		{name: "named wrong arch", nodes: objs(a1, s390), choice: Choice{Server: "s1"}, n: 1, err: []string{`--server-node "s1": node is arch s390x`}},
		{name: "cross zone, one zone", nodes: objs(a1, a2, a3), pl: Placement{Zone: ZoneCross}, n: 1,
			err: []string{"--placement cross-zone: no client and server node in different zones (usable nodes by zone: za: a1, a2, a3); use --placement same-zone or any"}},
		{name: "cross zone, all unknown", nodes: objs(u1, u2), pl: Placement{Zone: ZoneCross}, n: 1, err: []string{"usable nodes by zone: unknown: u1, u2"}},
		{name: "same zone impossible", nodes: objs(a1, b1, u1), n: 1,
			err: []string{"--placement same-zone: no client and server node share a zone (usable nodes by zone: unknown: u1; za: a1; zb: b1); use --placement any or cross-zone"}},
		{name: "same zone impossible with a choice", nodes: objs(a1, a2, b1), choice: Choice{Client: "b1"}, n: 1,
			err: []string{"client candidates by zone: zb: b1; server candidates by zone: za: a1, a2; zb: b1"}},
		{name: "pairs zero", nodes: objs(a1, a2), n: 0, err: []string{"--pairs 0: must be at least 1"}},
		{name: "bad policy", nodes: objs(a1, a2), pl: Placement{Zone: "nearby"}, n: 1, err: []string{`--placement "nearby": unknown policy`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := SelectPairs(context.Background(), fake.NewClientset(tt.nodes...), tt.choice, tt.pl, tt.n)
			if tt.err != nil {
				if err == nil {
					t.Fatalf("got %s, want error", pairString(ps))
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error has several lines: %q", err)
				}
				for _, want := range tt.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pairString(ps); got != tt.want {
				t.Errorf("pairs %q, want %q", got, tt.want)
			}
			if tt.zones != "" {
				if got := ps[0].ClientZone + "/" + ps[0].ServerZone; got != tt.zones {
					t.Errorf("zones %q, want %q", got, tt.zones)
				}
			}
			notes := strings.Join(ps[0].Notes, "|")
			for _, want := range tt.notes {
				if !strings.Contains(notes, want) {
					t.Errorf("notes %q lack %q", notes, want)
				}
			}
			if tt.notes == nil && tt.zones != "/" && !strings.Contains(tt.name, "unknown") && notes != "" {
				t.Errorf("unexpected notes %q", notes)
			}
		})
	}
}

func TestNodeFacts(t *testing.T) {
	full := node("w1", zone("eu-west-1a"), label(corev1.LabelTopologyRegion, "eu-west-1"), label(corev1.LabelInstanceTypeStable, "m5.large"))
	full.Status.NodeInfo = corev1.NodeSystemInfo{KernelVersion: "6.1.0-18-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)",
		ContainerRuntimeVersion: "containerd://1.7.13", KubeletVersion: "v1.30.2", Architecture: "amd64"}
	legacy := node("w2", label(corev1.LabelFailureDomainBetaZone, "z1"), label(corev1.LabelFailureDomainBetaRegion, "r1"),
		label(corev1.LabelInstanceType, "n1-standard-4"), label(corev1.LabelArchStable, "arm64"))
	for _, tt := range []struct {
		n    *corev1.Node
		want map[string]string
	}{
		{full, map[string]string{"kernel": "6.1.0-18-amd64", "os_image": "Debian GNU/Linux 12 (bookworm)", "container_runtime": "containerd://1.7.13",
			"kubelet": "v1.30.2", "arch": "amd64", "instance_type": "m5.large", "zone": "eu-west-1a", "region": "eu-west-1"}},
		{legacy, map[string]string{"arch": "arm64", "instance_type": "n1-standard-4", "zone": "z1", "region": "r1"}},
		{node("w3"), map[string]string{}},
	} {
		if got := Facts(tt.n); !maps.Equal(got, tt.want) {
			t.Errorf("Facts(%s) = %v, want %v", tt.n.Name, got, tt.want)
		}
	}
}

// selectNodes chooses the client and the server node with the default
// Placement (same zone, linux, amd64 or arm64, no taint tolerated): it is
// the first pair of SelectPairs(ctx, cs, c, Placement{}, 1).
func selectNodes(ctx context.Context, cs kubernetes.Interface, c Choice) (client, server *corev1.Node, err error) {
	pairs, err := SelectPairs(ctx, cs, c, Placement{}, 1)
	if err != nil {
		return nil, nil, err
	}
	return pairs[0].Client, pairs[0].Server, nil
}
