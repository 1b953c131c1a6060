package profile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
)

// KernelSymbolCacheDir holds the per-boot cache of the kernel's text
// symbols (root only: the addresses defeat KASLR). A variable so that
// tests use their own.
var KernelSymbolCacheDir = "/run/cnibench"

// kernelSymbols returns the kernel's text symbols. Reading /proc/kallsyms
// costs about a quarter of a second of CPU (the kernel formats every
// symbol), which every profiled repeat would pay at Start and at Stop; so
// the core kernel's and the modules' symbols come from a per-boot cache
// (KernelSymbolCacheDir/kallsyms-<boot id>, written from /proc/kallsyms on
// first use and rewritten when /proc/modules changes), and the BPF
// programs' — which come and go — from the bpf system calls (their JITed
// addresses and names, as kallsyms names them: bpf_prog_<tag>_<name>).
// Whatever of that fails, /proc/kallsyms is read as it is.
func kernelSymbols() (*kallsyms, error) {
	if k, err := cachedKernelSymbols(); err == nil {
		return k, nil
	}
	return readKallsyms()
}

func cachedKernelSymbols() (*kallsyms, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return nil, err
	}
	mods, err := os.ReadFile("/proc/modules")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	sum := sha256.Sum256(mods)
	stamp := "# modules " + hex.EncodeToString(sum[:8]) + "\n"
	path := filepath.Join(KernelSymbolCacheDir, "kallsyms-"+strings.TrimSpace(string(boot)))
	bpf, err := bpfSymbols()
	if err != nil {
		return nil, err
	}
	var core *kallsyms
	if data, err := os.ReadFile(path); err == nil && bytes.HasPrefix(data, []byte(stamp)) {
		core, err = parseCache(string(data[len(stamp):]))
		if err != nil {
			return nil, fmt.Errorf("kernel symbol cache %s: %w", path, err)
		}
	} else {
		if core, err = readKallsyms(); err != nil {
			return nil, err
		}
		core.syms = withoutBPF(core.syms)
		writeCache(path, stamp, core) // best effort: a read-only /run costs time, not correctness
	}
	sort.Slice(bpf, func(i, j int) bool { return bpf[i].addr < bpf[j].addr })
	return &kallsyms{syms: mergeByAddr(core.syms, bpf)}, nil
}

// mergeByAddr merges two symbol lists sorted by address (the core table
// has no BPF program: only bpf's are added).
func mergeByAddr(a, b []ksym) []ksym {
	out := make([]ksym, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0].addr < a[0].addr {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

// startSymbols are the symbols a session keeps from its start: the BPF
// programs loaded then (one may be unloaded before Stop reads the rest),
// or all of /proc/kallsyms when the bpf system calls fail.
func startSymbols() (*kallsyms, error) {
	bpf, err := bpfSymbols()
	if err != nil {
		return readKallsyms()
	}
	sort.Slice(bpf, func(i, j int) bool { return bpf[i].addr < bpf[j].addr })
	return &kallsyms{syms: bpf}, nil
}

// parseCache parses the cache's lines ("%016x t name[\t[module]]", sorted
// by address as written) with the names as substrings of data: no
// allocation per symbol, a quarter of the time parseKallsyms takes.
func parseCache(data string) (*kallsyms, error) {
	k := &kallsyms{syms: make([]ksym, 0, strings.Count(data, "\n"))}
	for n := 1; len(data) > 0; n++ {
		line, rest, _ := strings.Cut(data, "\n")
		data = rest
		if len(line) < 20 || line[16] != ' ' || line[18] != ' ' {
			return nil, fmt.Errorf("line %d: %q: not a cache line", n, truncate(line, 80))
		}
		addr, err := parseHex([]byte(line[:16]))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		name, mod, _ := strings.Cut(line[19:], "\t")
		k.syms = append(k.syms, ksym{addr: addr, name: name, module: strings.Trim(mod, "[]")})
	}
	if !sort.SliceIsSorted(k.syms, func(i, j int) bool { return k.syms[i].addr < k.syms[j].addr }) {
		return nil, errors.New("not sorted by address")
	}
	return k, nil
}

func withoutBPF(s []ksym) []ksym {
	out := s[:0:0]
	for _, x := range s {
		if x.module != "bpf" {
			out = append(out, x)
		}
	}
	return out
}

// writeCache writes the core symbols atomically, readable by root only.
func writeCache(path, stamp string, k *kallsyms) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".kallsyms-*")
	if err != nil {
		return
	}
	var b bytes.Buffer
	b.WriteString(stamp)
	for _, s := range k.syms {
		fmt.Fprintf(&b, "%016x t %s", s.addr, s.name)
		if s.module != "" {
			b.WriteString("\t[" + s.module + "]")
		}
		b.WriteByte('\n')
	}
	_, err = io.Copy(f, &b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// bpfSymbols lists the JITed functions of every loaded BPF program.
func bpfSymbols() ([]ksym, error) {
	var out []ksym
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list BPF programs: %w", err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // unloaded meanwhile
			}
			return nil, fmt.Errorf("BPF program %d: %w", id, err)
		}
		info, err := p.Info()
		p.Close()
		if err != nil {
			return nil, fmt.Errorf("BPF program %d: %w", id, err)
		}
		addrs, ok := info.JitedKsymAddrs()
		if !ok {
			continue
		}
		name := info.Name
		if name == "" {
			name = "F"
		}
		for _, a := range addrs {
			out = append(out, ksym{addr: uint64(a), name: "bpf_prog_" + info.Tag + "_" + name, module: "bpf"})
		}
	}
}
