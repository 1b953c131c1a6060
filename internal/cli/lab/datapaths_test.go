package labcmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestWriteDatapathsGolden(t *testing.T) {
	rows := []datapathRow{
		{name: "baseline", description: "node to node over the wire, no pods (the ceiling)"},
		{name: "veth-routing", description: "Calico-style L3: /32 pods, proxy ARP, routed by the node's kernel with the filter/NAT chains and conntrack a kube-proxy node has"},
		{name: "ebpf-host-routing", description: "veth-routing topology with Cilium-style BPF host routing: bpf_redirect_peer into the pod, bpf_redirect_neigh out of the node"},
		{name: "netkit", description: "L3 pods on netkit devices (BPF-programmable veth replacement)",
			reason: "netkit device not supported: netkit probe: add netkit pair cnb-nk0/cnb-nk1: not supported: kernel has no netkit device (CONFIG_NETKIT) (operation not supported)"},
	}
	var b bytes.Buffer
	if err := writeDatapaths(&b, rows, tableWidth); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if n := utf8.RuneCountInString(l); n > tableWidth {
			t.Errorf("line of %d columns (> %d): %q", n, tableWidth, l)
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space: %q", l)
		}
	}
	path := filepath.Join("testdata", "datapaths.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		_ = os.WriteFile(path+".got", b.Bytes(), 0o644)
		t.Fatalf("output differs from %s; see %s.got", path, path)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"a b c", 3, []string{"a b", "c"}},
		{"averyveryverylongword x", 5, []string{"averyveryverylongword", "x"}},
	} {
		if got := wrap(tc.in, tc.width); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}
