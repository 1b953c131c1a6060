package profile

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// fakeProcs is a procSource over fixed processes; files cannot be opened,
// so user frames stay [unknown].
type fakeProcs map[uint32]fakeProc

type fakeProc struct {
	comm string
	maps []mapping
}

var errGone = errors.New("no such process")

func (f fakeProcs) comm(pid uint32) (string, error) {
	p, ok := f[pid]
	if !ok {
		return "", errGone
	}
	return p.comm, nil
}

func (f fakeProcs) maps(pid uint32) ([]mapping, error) {
	p, ok := f[pid]
	if !ok {
		return nil, errGone
	}
	return p.maps, nil
}

func (f fakeProcs) open(uint32, *mapping) (fileReader, error) { return nil, errGone }

var testProcs = fakeProcs{
	100: {comm: "cnibench", maps: []mapping{{start: 0x400000, limit: 0x800000, path: "/usr/bin/cnibench", inode: 1}}},
	200: {comm: "iperf3", maps: []mapping{{start: 0x400000, limit: 0x500000, path: "/usr/bin/iperf3", inode: 2}}},
	300: {comm: "ksoftirqd/0"},
}

// testKernel resolves the kernel addresses the synthetic samples use.
func testKernel(t testing.TB) *kallsyms {
	k, err := parseKallsyms(strings.NewReader(`ffffffff81000000 T tcp_sendmsg
ffffffff81001000 T _copy_from_iter
ffffffff81002000 T do_syscall_64
ffffffff81003000 T nf_hook_slow
ffffffff81004000 T net_rx_action
ffffffff81005000 T pv_native_safe_halt
ffffffff81006000 T do_idle
ffffffff81007000 T _raw_spin_lock
ffffffff81008000 T entry_SYSCALL_64
ffffffffc0002000 t bpf_prog_6deef7357e7b4530_cil_from_container	[bpf]
`))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const (
	kTCPSend = 0xffffffff81000010
	kCopy    = 0xffffffff81001010
	kSyscall = 0xffffffff81002010
	kNF      = 0xffffffff81003010
	kRX      = 0xffffffff81004010
	kHalt    = 0xffffffff81005010
	kIdle    = 0xffffffff81006010
	kLock    = 0xffffffff81007010
	kEntry   = 0xffffffff81008010
	kBPF     = 0xffffffffc0002010
)

// samplesProfile builds a profile from (pid, cpu, chain) samples.
func samplesProfile(t testing.TB, samples ...rawChain) *Profile {
	t.Helper()
	c := newCollector(testProcs)
	for _, s := range samples {
		for range s.n {
			c.record(marshalSample(rawSample{pid: s.pid, tid: s.pid, cpu: s.cpu, period: 1000}, s.chain))
		}
	}
	c.record(lostRecord(2))
	p := c.build(buildInfo{start: time.Unix(1, 0), window: time.Second, frequency: 999, cpus: 2}, testKernel(t))
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return &Profile{P: p, Samples: int(c.samples), Lost: c.lost, Frequency: 999, CPUs: 2, Window: time.Second}
}

type rawChain struct {
	pid, cpu uint32
	n        int
	chain    []uint64
}

func kchain(ips ...uint64) []uint64 { return append([]uint64{contextKernel}, ips...) }

func TestBuild(t *testing.T) {
	p := samplesProfile(t,
		rawChain{100, 0, 3, append(kchain(kCopy, kTCPSend, kSyscall), contextUser, 0x401000, 0x402000)},
		rawChain{0, 1, 2, kchain(kHalt, kIdle)},
		rawChain{999, 1, 1, []uint64{contextUser, 0x401000}}, // exited before it was read
	)
	if p.Samples != 6 || p.Lost != 2 {
		t.Errorf("samples %d lost %d, want 6 and 2", p.Samples, p.Lost)
	}
	var got []string
	for _, s := range p.P.Sample {
		var names []string
		for _, l := range s.Location {
			names = append(names, l.Line[0].Function.Name)
		}
		got = append(got, strings.Join(names, ";")+" comm="+s.Label["comm"][0])
		if s.Value[1] != 1000*s.Value[0] {
			t.Errorf("cpu value %d for %d samples of period 1000", s.Value[1], s.Value[0])
		}
	}
	want := []string{
		"_copy_from_iter;tcp_sendmsg;do_syscall_64;[unknown] cnibench;[unknown] cnibench;comm:cnibench comm=cnibench",
		"pv_native_safe_halt;do_idle;comm:swapper comm=swapper",
		"[unknown] [anon];comm:[unknown] comm=[unknown]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if len(back.Sample) != 3 || back.Sample[0].NumLabel["pid"][0] != 100 || back.Period != int64(time.Second)/999 {
		t.Errorf("round trip lost data: %v", back)
	}
}

func TestMerge(t *testing.T) {
	a := samplesProfile(t, rawChain{100, 0, 3, kchain(kTCPSend, kSyscall)}, rawChain{0, 1, 1, kchain(kHalt)})
	b := samplesProfile(t, rawChain{100, 0, 2, kchain(kTCPSend, kSyscall)}, rawChain{200, 1, 4, []uint64{contextUser, 0x401000}})
	m, err := Merge(a, nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Samples != 10 || m.Lost != 4 || m.Window != 2*time.Second || m.CPUs != 2 {
		t.Errorf("merged header %+v", m)
	}
	var total, tcp int64
	for _, s := range m.P.Sample {
		total += s.Value[0]
		if s.Location[0].Line[0].Function.Name == "tcp_sendmsg" {
			tcp += s.Value[0]
		}
	}
	if total != 10 || tcp != 5 || len(m.P.Sample) != 3 {
		t.Errorf("merged %d samples (%d tcp_sendmsg) in %d stacks, want 10 (5) in 3", total, tcp, len(m.P.Sample))
	}
	if sh := Breakdown(m.P); sh.Samples != 10 || sh.Exclusive["tcpip"] != 0.5 {
		t.Errorf("breakdown of the merge: %+v", sh)
	}
	b.Frequency = 99
	if _, err := Merge(a, b); err == nil || !strings.Contains(err.Error(), "Options.Frequency") {
		t.Errorf("merging 999 Hz with 99 Hz: %v", err)
	}
	if _, err := Merge(nil); err == nil {
		t.Error("merging nothing succeeded")
	}
}
