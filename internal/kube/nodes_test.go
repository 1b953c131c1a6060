package kube

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
		choice         NodeChoice
		client, server string
		err            []string // substrings of the error
	}{
		{name: "auto", nodes: []runtime.Object{w3, cp, w2, w1}, client: "w1", server: "w2"},
		{name: "auto prefers workers", nodes: []runtime.Object{cpOpen, w2}, client: "w2", server: "cp"},
		{name: "client named", nodes: []runtime.Object{w3, cp, w2, w1}, choice: NodeChoice{Client: "w3"}, client: "w3", server: "w1"},
		{name: "server named", nodes: []runtime.Object{w3, cp, w2, w1}, choice: NodeChoice{Server: "w1"}, client: "w2", server: "w1"},
		{name: "both named", nodes: []runtime.Object{w3, cp, w2, w1}, choice: NodeChoice{Client: "w2", Server: "w3"}, client: "w2", server: "w3"},
		{name: "named tainted NoSchedule", nodes: []runtime.Object{cp, w1}, choice: NodeChoice{Server: "cp"}, client: "w1", server: "cp"},
		{name: "client selector", nodes: []runtime.Object{w3, cp, w2, w1}, choice: NodeChoice{Client: "node-role=bench"}, client: "w2", server: "w1"},
		{name: "both selectors", nodes: []runtime.Object{w3, cp, w2, w1}, choice: NodeChoice{Client: "node-role=bench", Server: "node-role=bench"}, client: "w2", server: "w3"},
		{name: "too few usable", nodes: bad,
			err: []string{"1 of 5 nodes usable", "cp tainted node-role.kubernetes.io/control-plane:NoSchedule", "w2 not Ready", "w3 cordoned", "w4 tainted gpu:NoExecute", "--client-node/--server-node"}},
		{name: "no nodes", err: []string{"0 of 0 nodes usable"}},
		{name: "same name", nodes: []runtime.Object{w1, w2}, choice: NodeChoice{Client: "w1", Server: "w1"}, err: []string{"must run on different nodes"}},
		{name: "unknown name", nodes: []runtime.Object{w1, w2}, choice: NodeChoice{Client: "nope"}, err: []string{`--client-node "nope": no such node`}},
		{name: "named not ready", nodes: bad, choice: NodeChoice{Server: "w2"}, err: []string{`--server-node "w2": node is not Ready`}},
		{name: "named NoExecute", nodes: bad, choice: NodeChoice{Server: "w4"}, err: []string{`node is tainted gpu:NoExecute`}},
		{name: "selector matches none usable", nodes: bad, choice: NodeChoice{Client: "kubernetes.io/hostname=w2"}, err: []string{`no usable node matches (1 nodes match`}},
		{name: "bad selector", nodes: bad, choice: NodeChoice{Client: "a=b=c"}, err: []string{"invalid label selector"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, o := range tt.nodes {
				objs = append(objs, o.DeepCopyObject())
			}
			c, s, err := SelectNodes(context.Background(), fake.NewClientset(objs...), tt.choice)
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
		if got := NodeInternalIP(tt.n); got != tt.want {
			t.Errorf("NodeInternalIP(%v) = %q, want %q", tt.n.Status.Addresses, got, tt.want)
		}
	}
}
