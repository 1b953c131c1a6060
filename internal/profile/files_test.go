package profile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	a := samplesProfile(t, rawChain{100, 0, 3, kchain(kTCPSend, kSyscall)}, rawChain{0, 1, 1, kchain(kBPF, kIdle)})
	a.Windows = 2
	b := samplesProfile(t, rawChain{100, 0, 1, []uint64{contextUser, 0x401000}})
	b.Windows = 1
	var files []string
	for i, p := range []*Profile{a, b} {
		name := filepath.Join(dir, []string{"a.pb.gz", "b.pb.gz"}[i])
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files = append(files, name)
	}
	back, err := ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if back.Samples != 4 || back.Frequency != 999 || back.CPUs != 2 || back.Windows != 2 || back.Lost != 2 || back.Window != time.Second {
		t.Errorf("read back %+v", back)
	}
	out := filepath.Join(dir, "sum.pb.gz")
	sum, err := MergeFiles(out, files...)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 5 || sum.Windows != 3 || sum.Seconds != 2 || sum.Hz != 999 || sum.CPUs != 2 {
		t.Errorf("summary %+v", sum)
	}
	if len(sum.Top) == 0 || sum.Top[0].Name != "tcp_sendmsg" || sum.Top[0].Family != "tcpip" || sum.Top[0].SelfPct != 60 {
		t.Errorf("top %+v", sum.Top)
	}
	if len(sum.Top) != 3 || sum.Top[1].Name != "[unknown] cnibench" || sum.Top[1].Family != FamilyEngine {
		t.Errorf("top %+v: want the engine's user frame second", sum.Top)
	}
	if sum.BPF["cil_from_container"] != 20 {
		t.Errorf("BPF %v", sum.BPF)
	}
	merged, err := ReadFile(out)
	if err != nil || merged.Samples != 5 || merged.Windows != 3 {
		t.Fatalf("merged file: %+v, %v", merged, err)
	}
	m := Breakdown(merged.P).Metrics()
	if len(m) != 2*len(Families) || m["cpu_share_tcpip"] != 60 || m["cpu_incl_bpf"] != 20 {
		t.Errorf("metrics %v", m)
	}
	if _, err := MergeFiles(out); err == nil {
		t.Error("merging no files succeeded")
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("reading a missing file succeeded")
	}
}
