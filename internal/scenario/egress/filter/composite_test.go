package filter

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from the generated rules (-update rewrites it):\n%s", path, got)
	}
}

func TestCalicoRulesGolden(t *testing.T) {
	got := string(calicoRules(ipsetName, []string{"FORWARD", "1", "-i", "veth0", "-j", chainEgress}))
	golden(t, "calico-like.rules", got)
	// The order is what makes it Calico's: established first, then invalid,
	// then the policy chain, whose first rule is the counted set drop.
	lines := strings.Split(strings.TrimSpace(got), "\n")
	first := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "-A "+chainEgress) })
	if first < 0 || !strings.Contains(lines[first], "RELATED,ESTABLISHED -j ACCEPT") || !strings.Contains(lines[first+1], "INVALID -j DROP") {
		t.Fatalf("workload chain does not start with established accept, invalid drop:\n%s", got)
	}
	pol := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "-A "+chainCaliPolicy) })
	if pol < 0 || !strings.Contains(lines[pol], "--match-set "+ipsetName+" dst -j DROP") {
		t.Fatalf("policy chain does not start with the set drop:\n%s", got)
	}
}

func TestKubeProxyRulesGolden(t *testing.T) {
	got := kubeProxyRules()
	golden(t, "cilium-like-kube-proxy.nft", got)
	if strings.Count(got, "{") != strings.Count(got, "}") {
		t.Fatal("unbalanced braces")
	}
	for i := range kubeProxyServices {
		def := strings.Index(got, "chain service-"+string(rune('0'+i))+" {")
		use := strings.Index(got, "goto service-"+string(rune('0'+i)))
		if def < 0 || use < 0 || def > use {
			t.Fatalf("service chain %d must be defined before the map refers to it", i)
		}
	}
}
