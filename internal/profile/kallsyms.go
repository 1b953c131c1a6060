package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ksym is one text symbol of /proc/kallsyms.
type ksym struct {
	addr   uint64
	name   string
	module string // "" for the core kernel, "bpf" for BPF programs
}

// kallsyms is a sorted table of kernel text symbols.
type kallsyms struct {
	syms []ksym
}

// errKptrRestrict says every address read as zero.
var errKptrRestrict = errors.New("every /proc/kallsyms address reads as 0: kernel.kptr_restrict hides them; run as root (CAP_SYSLOG) with kptr_restrict 0 or 1")

// parseKallsyms reads /proc/kallsyms's format ("addr type name [module]"),
// keeping text symbols (types t, T, w, W) sorted by address. Malformed
// lines are an error naming the line; a table whose addresses are all
// zero is errKptrRestrict.
func parseKallsyms(r io.Reader) (*kallsyms, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	k := &kallsyms{}
	sawAny, nonZero := false, false
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		f0, rest := nextField(line)
		if len(f0) == 0 {
			continue
		}
		f1, rest := nextField(rest)
		f2, rest := nextField(rest)
		if len(f1) != 1 || len(f2) == 0 {
			return nil, fmt.Errorf("kallsyms line %d: %q: want \"address type name [module]\"", n, truncate(string(line), 80))
		}
		addr, err := parseHex(f0)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: address %q: %w", n, truncate(string(f0), 40), err)
		}
		sawAny = true
		if addr != 0 {
			nonZero = true
		}
		switch f1[0] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		s := ksym{addr: addr, name: string(f2)}
		if f3, _ := nextField(rest); len(f3) > 0 {
			s.module = string(bytes.Trim(f3, "[]"))
		}
		k.syms = append(k.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	if sawAny && !nonZero {
		return nil, errKptrRestrict
	}
	sort.SliceStable(k.syms, func(i, j int) bool { return k.syms[i].addr < k.syms[j].addr })
	return k, nil
}

// nextField splits off the first space- or tab-separated field.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// parseHex parses a hexadecimal address of at most 16 digits.
func parseHex(b []byte) (uint64, error) {
	if len(b) == 0 || len(b) > 16 {
		return 0, fmt.Errorf("want 1 to 16 hex digits")
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, fmt.Errorf("%q is not a hex digit", c)
		}
		v = v<<4 | uint64(c)
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// lookup returns the symbol containing addr: the last symbol at or below
// it. Addresses below the first symbol or more than maxKsymSize beyond the
// last are not found.
func (k *kallsyms) lookup(addr uint64) (ksym, bool) {
	if k == nil || len(k.syms) == 0 {
		return ksym{}, false
	}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].addr > addr })
	if i == 0 {
		return ksym{}, false
	}
	s := k.syms[i-1]
	if i == len(k.syms) && addr-s.addr > maxKsymSize {
		return ksym{}, false
	}
	return s, true
}

// maxKsymSize bounds the size of the last kernel symbol (kallsyms has no
// sizes; other symbols end where the next begins).
const maxKsymSize = 1 << 20

// span returns the lowest and highest symbol addresses.
func (k *kallsyms) span() (lo, hi uint64) {
	if k == nil || len(k.syms) == 0 {
		return 0, 0
	}
	return k.syms[0].addr, k.syms[len(k.syms)-1].addr
}

// kernelFunc is how a kernel symbol appears in a profile.
type kernelFunc struct {
	name, system, file string
}

// BPFPrefix starts the function name of every BPF program in a profile:
// kallsyms' bpf_prog_<tag>_<name> becomes "bpf_prog:<name>" (the full
// kallsyms name, with the tag, is the function's system name).
const BPFPrefix = "bpf_prog:"

// funcOf names a kernel symbol: BPF programs (bpf_prog_<16 hex tag>_<name>
// in the bpf "module") become bpf_prog:<name>; a module's symbols have the
// module as file name.
func funcOf(s ksym) kernelFunc {
	f := kernelFunc{name: s.name, system: s.name, file: "[kernel.kallsyms]"}
	if s.module != "" {
		f.file = "[" + s.module + "]"
	}
	if tag, name, ok := bpfProgName(s.name); ok && s.module == "bpf" {
		if name == "" {
			name = tag
		}
		f.name = BPFPrefix + name
	}
	return f
}

// bpfProgName splits "bpf_prog_<tag>_<name>" (tag: 16 hex digits).
func bpfProgName(sym string) (tag, name string, ok bool) {
	rest, found := strings.CutPrefix(sym, "bpf_prog_")
	if !found || len(rest) < 16 {
		return "", "", false
	}
	tag = rest[:16]
	for _, c := range tag {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return "", "", false
		}
	}
	rest = rest[16:]
	switch {
	case rest == "":
		return tag, "", true
	case rest[0] == '_':
		return tag, rest[1:], true
	}
	return "", "", false
}
