package profile

import (
	"math"
	"strings"
	"testing"
)

// TestNodeRootBreakdown checks that a node root frame changes neither the
// breakdown nor the top functions, and that it sits above comm:.
func TestNodeRootBreakdown(t *testing.T) {
	mk := func() *Profile {
		return samplesProfile(t,
			rawChain{100, 0, 3, append(kchain(kCopy, kTCPSend, kSyscall), contextUser, 0x401000)},
			rawChain{100, 1, 2, []uint64{contextUser, 0x401000, 0x402000}},
			rawChain{0, 1, 2, kchain(kHalt, kIdle)},
			rawChain{200, 1, 4, []uint64{contextUser, 0x401000}},
			rawChain{200, 0, 1, append(kchain(kNF, kRX, kEntry), contextUser, 0x401000)},
			rawChain{300, 0, 2, kchain(kBPF, kRX)},
		)
	}
	plain, a, b := mk(), mk(), mk()
	if err := AddNodeRoot(a, "node-a"); err != nil {
		t.Fatal(err)
	}
	if err := AddNodeRoot(b, "node-b"); err != nil {
		t.Fatal(err)
	}
	if err := a.P.CheckValid(); err != nil {
		t.Fatal(err)
	}
	for _, s := range a.P.Sample {
		n := len(s.Location)
		if locName(s.Location[n-1]) != "node:node-a" || !strings.HasPrefix(locName(s.Location[n-2]), CommPrefix) || s.Label[NodeLabel][0] != "node-a" {
			t.Fatalf("stack %v: want node:node-a above comm:", s.Location)
		}
	}
	want := Breakdown(plain.P)
	got := Breakdown(a.P)
	for _, f := range Families {
		if math.Abs(got.Exclusive[f.Name]-want.Exclusive[f.Name]) > 1e-12 || math.Abs(got.Inclusive[f.Name]-want.Inclusive[f.Name]) > 1e-12 {
			t.Errorf("%s: exclusive %v inclusive %v with the node root, %v %v without", f.Name,
				got.Exclusive[f.Name], got.Inclusive[f.Name], want.Exclusive[f.Name], want.Inclusive[f.Name])
		}
	}
	if want.Exclusive[FamilyEngine] == 0 || want.Exclusive[FamilyOtherProcs] == 0 || want.Exclusive["sched_idle"] == 0 {
		t.Fatalf("the synthetic profile should have engine, other_procs and idle samples: %+v", want.Exclusive)
	}
	for _, f := range top(a.P, 50) {
		if strings.HasPrefix(f.Name, NodePrefix) {
			t.Errorf("top functions list %s", f.Name)
		}
	}
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]int64{}
	for _, s := range m.P.Sample {
		nodes[locName(s.Location[len(s.Location)-1])] += s.Value[0]
	}
	if nodes["node:node-a"] != int64(a.Samples) || nodes["node:node-b"] != int64(b.Samples) {
		t.Errorf("merged samples by node root %v, want %d each", nodes, a.Samples)
	}
	if mb := Breakdown(m.P); math.Abs(mb.Exclusive[FamilyEngine]-want.Exclusive[FamilyEngine]) > 1e-12 {
		t.Errorf("merge of two nodes: engine %v, want %v", mb.Exclusive[FamilyEngine], want.Exclusive[FamilyEngine])
	}
	for _, tc := range []struct {
		p    *Profile
		node string
	}{{nil, "x"}, {mk(), ""}} {
		if err := AddNodeRoot(tc.p, tc.node); err == nil {
			t.Errorf("AddNodeRoot(%v, %q) succeeded", tc.p, tc.node)
		}
	}
}
