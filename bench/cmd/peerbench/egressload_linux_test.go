package main

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario/egress/filter"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestEgressPeerFilesLoad checks that the peers' files load with nft -f and
// ipset restore (1000 CIDRs, each in a fresh namespace of its own), and that
// a cnibench helper load succeeds next to them.
func TestEgressPeerFilesLoad(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "nft", "ipset", "time")
	cidrs, err := filter.Generate(egressSeed, 1000, netip.MustParseAddr(egressMust))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nftF, ipsetF := filepath.Join(dir, "deny.nft"), filepath.Join(dir, "deny.ipset")
	nf, err := os.Create(nftF)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeNftScript(nf, egressDev, cidrs, 100); err != nil {
		t.Fatal(err)
	}
	nf.Close()
	inf, err := os.Create(ipsetF)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeIPSetRestore(inf, "cnb-egress", 1024, 66560, cidrs); err != nil {
		t.Fatal(err)
	}
	inf.Close()
	timeBin, err := exec.LookPath("time")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		stdin string
		argv  []string
	}{
		{"", []string{"nft", "-f", nftF}},
		{ipsetF, []string{"ipset", "restore"}},
	} {
		ns, err := newEgressNS(1000 + i)
		if err != nil {
			t.Fatal(err)
		}
		sec, rss, err := egressPeerTrial(t.Context(), timeBin, ns, tc.stdin, tc.argv)
		if cerr := ns.close(); cerr != nil {
			t.Error(cerr)
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.argv, err)
		}
		if !(sec > 0) || rss <= 0 {
			t.Errorf("%v: %v s, %d bytes", tc.argv, sec, rss)
		}
	}
}

func TestProcStatusBytes(t *testing.T) {
	for _, f := range []string{"VmRSS", "VmHWM"} {
		v, err := procStatusBytes("self", f)
		if err != nil || v <= 0 {
			t.Errorf("%s: %d, %v", f, v, err)
		}
	}
	if _, err := procStatusBytes("self", "NoSuchField"); err == nil {
		t.Error("NoSuchField: no error")
	}
}
