package profile

import (
	"errors"
	"strings"
	"testing"
)

const testKallsyms = `ffffffff81000000 T _stext
ffffffff81000100 T tcp_sendmsg
ffffffff81000200 t tcp_sendmsg_locked.cold
ffffffff81000300 D some_data
ffffffff81000400 W weak_fn
ffffffffc0001000 t vxlan_xmit	[vxlan]
ffffffffc0002000 t bpf_prog_6deef7357e7b4530_cil_from_container	[bpf]
ffffffffc0002800 t bpf_prog_0123456789abcdef	[bpf]
ffffffffc0003000 t bpf_dispatcher_xdp	[bpf]
`

func TestKallsyms(t *testing.T) {
	k, err := parseKallsyms(strings.NewReader(testKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr               uint64
		name, system, file string
		ok                 bool
	}{
		{0xffffffff80000000, "", "", "", false},
		{0xffffffff81000000, "_stext", "_stext", KernelMapping, true},
		{0xffffffff81000150, "tcp_sendmsg", "tcp_sendmsg", KernelMapping, true},
		{0xffffffff81000350, "tcp_sendmsg_locked.cold", "tcp_sendmsg_locked.cold", KernelMapping, true}, // data symbols are skipped
		{0xffffffff81000400, "weak_fn", "weak_fn", KernelMapping, true},
		{0xffffffffc0001010, "vxlan_xmit", "vxlan_xmit", "[vxlan]", true},
		{0xffffffffc0002010, "bpf_prog:cil_from_container", "bpf_prog_6deef7357e7b4530_cil_from_container", "[bpf]", true},
		{0xffffffffc0002810, "bpf_prog:0123456789abcdef", "bpf_prog_0123456789abcdef", "[bpf]", true},
		{0xffffffffc0003001, "bpf_dispatcher_xdp", "bpf_dispatcher_xdp", "[bpf]", true},
		{0xffffffffc0003000 + maxKsymSize + 1, "", "", "", false},
	}
	for _, tt := range tests {
		s, ok := k.lookup(tt.addr)
		if ok != tt.ok {
			t.Errorf("lookup(%#x) found %v, want %v", tt.addr, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if f := funcOf(s); f != (kernelFunc{tt.name, tt.system, tt.file}) {
			t.Errorf("lookup(%#x) = %+v, want %q %q %q", tt.addr, f, tt.name, tt.system, tt.file)
		}
	}
}

func TestKallsymsErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"kptr_restrict", "0000000000000000 T _stext\n0000000000000000 t foo\n", "kptr_restrict"},
		{"bad address", "zzzz T foo\n", "line 1: address"},
		{"missing name", "ffffffff81000000 T\n", "line 1"},
		{"long type", "ffffffff81000000 TT foo\n", "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseKallsyms(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if tt.name == "kptr_restrict" && !errors.Is(err, errKptrRestrict) {
				t.Errorf("%v is not errKptrRestrict", err)
			}
		})
	}
}

func FuzzParseKallsyms(f *testing.F) {
	f.Add(testKallsyms)
	f.Add("0000000000000000 T x\n")
	f.Add("ffffffffffffffff t y [m]\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		k, err := parseKallsyms(strings.NewReader(in))
		if err != nil {
			return
		}
		for i := 1; i < len(k.syms); i++ {
			if k.syms[i].addr < k.syms[i-1].addr {
				t.Fatal("not sorted")
			}
		}
		for _, s := range k.syms {
			got, ok := k.lookup(s.addr)
			if !ok || got.addr != s.addr {
				t.Fatalf("lookup(%#x) = %+v, %v", s.addr, got, ok)
			}
			_ = funcOf(got)
		}
	})
}

func TestParseMaps(t *testing.T) {
	const in = `00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon
00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/dbus-daemon
7f0000000000-7f0000100000 r-xp 00002000 fe:00 42   /lib/x86_64-linux-gnu/libc.so.6
7f0000200000-7f0000201000 r-xp 00000000 00:00 0    [vdso]
7f0000300000-7f0000301000 rwxp 00000000 00:00 0 
7f0000400000-7f0000401000 r-xp 00000000 fe:00 43   /tmp/with space (deleted)
`
	ms, err := parseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		start  uint64
		path   string
		base   string
		backed bool
	}{
		{0x400000, "/usr/bin/dbus-daemon", "dbus-daemon", true},
		{0x7f0000000000, "/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6", true},
		{0x7f0000200000, "[vdso]", "[vdso]", false},
		{0x7f0000300000, "", "[anon]", false},
		{0x7f0000400000, "/tmp/with space (deleted)", "with space", true},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d mappings, want %d: %+v", len(ms), len(want), ms)
	}
	for i, w := range want {
		m := ms[i]
		if m.start != w.start || m.path != w.path || m.base() != w.base || m.fileBacked() != w.backed {
			t.Errorf("mapping %d = %+v (base %q), want %+v", i, m, m.base(), w)
		}
	}
	if m := findMapping(ms, 0x7f0000000010); m == nil || m.offset != 0x2000 {
		t.Errorf("findMapping in libc = %+v", m)
	}
	if m := findMapping(ms, 0x500000); m != nil {
		t.Errorf("findMapping in a gap = %+v", m)
	}
	for _, bad := range []string{"00400000 r-xp 0 08:02 1 /x\n", "zz-00452000 r-xp 0 08:02 1 /x\n", "00400000-00452000 r-xp\n"} {
		if _, err := parseMaps(strings.NewReader(bad)); err == nil {
			t.Errorf("parseMaps(%q) accepted", bad)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0\n", []int{0}, true},
		{"0-3", []int{0, 1, 2, 3}, true},
		{"0-1,4,6-7", []int{0, 1, 4, 6, 7}, true},
		{"", nil, false},
		{"a", nil, false},
		{"3-1", nil, false},
		{"0-99999999", nil, false},
	}
	for _, tt := range tests {
		got, err := parseCPUList(tt.in)
		if (err == nil) != tt.ok || (tt.ok && !equalInts(got, tt.want)) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
