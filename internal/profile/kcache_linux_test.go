package profile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestKernelSymbolCache: the cached core symbols and the BPF programs from
// the bpf system calls give the table /proc/kallsyms gives, first by
// writing the cache, then from it.
func TestKernelSymbolCache(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	defer func(d string) { KernelSymbolCacheDir = d }(KernelSymbolCacheDir)
	KernelSymbolCacheDir = t.TempDir()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "cnb_symtest", Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		t.Skip("cannot load a BPF program:", err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	ours := "bpf_prog_" + info.Tag + "_cnb_symtest"
	want, err := readKallsyms()
	if err != nil {
		t.Skip(err)
	}
	for _, pass := range []string{"writing the cache", "from the cache"} {
		got, err := cachedKernelSymbols()
		if err != nil {
			t.Fatalf("%s: %v", pass, err)
		}
		core := func(k *kallsyms) (n int, bpf map[string]bool) {
			bpf = map[string]bool{}
			for _, s := range k.syms {
				switch s.module {
				case "bpf":
					if strings.HasPrefix(s.name, "bpf_prog_") {
						bpf[s.name] = true
					}
				case "": // the core kernel: fixed while booted (trampolines and modules may come and go)
					n++
				}
			}
			return n, bpf
		}
		wn, _ := core(want)
		gn, gb := core(got)
		if wn != gn {
			t.Errorf("%s: %d core symbols, /proc/kallsyms has %d", pass, gn, wn)
		}
		// Other tests load and unload programs meanwhile: check our own.
		if !gb[ours] {
			t.Errorf("%s: this test's BPF program %s is missing", pass, ours)
		}
		if w := want.syms[len(want.syms)/2]; w.module != "bpf" {
			if g, ok := got.lookup(w.addr); !ok || g.name != w.name {
				t.Errorf("%s: %#x resolves to %q, want %q", pass, w.addr, g.name, w.name)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(KernelSymbolCacheDir, "kallsyms-*"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the cache must be readable by root only: %v %v", fi.Mode(), err)
	}
}

func TestParseCache(t *testing.T) {
	k, err := parseCache("ffffffff81000000 t a\nffffffff81000010 t b\t[mod]\n")
	if err != nil || len(k.syms) != 2 || k.syms[1].name != "b" || k.syms[1].module != "mod" || k.syms[0].addr != 0xffffffff81000000 {
		t.Fatalf("%+v %v", k, err)
	}
	for _, bad := range []string{"ffffffff81000010 t b\nffffffff81000000 t a\n", "nonsense\n", "zzzzzzzzzzzzzzzz t a\n"} {
		if _, err := parseCache(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseCache(f *testing.F) {
	f.Add("ffffffff81000000 t a\nffffffff81000010 t b\t[mod]\n")
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseCache(s) })
}
