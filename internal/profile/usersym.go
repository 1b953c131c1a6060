package profile

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// mapping is one executable line of /proc/<pid>/maps.
type mapping struct {
	start, limit, offset uint64
	dev                  string
	inode                uint64
	path                 string // "" for anonymous memory; "[vdso]" etc. for special ones
}

// fileBacked reports whether the mapping is a file that can be symbolised.
func (m *mapping) fileBacked() bool { return strings.HasPrefix(m.path, "/") && m.inode != 0 }

// key identifies the mapped file (not the mapping).
func (m *mapping) key() fileKey { return fileKey{path: m.path, dev: m.dev, inode: m.inode} }

// fileKey identifies a mapped file: the same path in two mount namespaces
// may be two files.
type fileKey struct {
	path  string
	dev   string
	inode uint64
}

// base is the mapping's file name as used in "[unknown] <base>".
func (m *mapping) base() string {
	switch {
	case m == nil || m.path == "":
		return "[anon]"
	case strings.HasPrefix(m.path, "["):
		return m.path
	}
	return path.Base(strings.TrimSuffix(m.path, " (deleted)"))
}

// parseMaps reads /proc/<pid>/maps, keeping executable mappings sorted by
// address.
func parseMaps(r io.Reader) ([]mapping, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64*1024)
	var ms []mapping
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		// 00400000-00452000 r-xp 00000000 08:02 173521   /usr/bin/dbus-daemon
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("maps line %d: %q: want \"start-end perms offset dev inode [path]\"", n, truncate(line, 80))
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("maps line %d: range %q has no '-'", n, truncate(f[0], 40))
		}
		var m mapping
		var err error
		if m.start, err = strconv.ParseUint(lo, 16, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: start: %w", n, err)
		}
		if m.limit, err = strconv.ParseUint(hi, 16, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: end: %w", n, err)
		}
		if m.offset, err = strconv.ParseUint(f[2], 16, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: offset: %w", n, err)
		}
		if m.inode, err = strconv.ParseUint(f[4], 10, 64); err != nil {
			return nil, fmt.Errorf("maps line %d: inode: %w", n, err)
		}
		if len(f[1]) < 3 || f[1][2] != 'x' || m.limit <= m.start {
			continue
		}
		m.dev = f[3]
		if len(f) > 5 {
			// The path is the rest of the line after the inode (it may
			// contain spaces).
			idx := strings.Index(line, f[5])
			m.path = line[idx:]
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].start < ms[j].start })
	return ms, nil
}

// findMapping returns the mapping holding addr, or nil.
func findMapping(ms []mapping, addr uint64) *mapping {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].limit > addr })
	if i < len(ms) && ms[i].start <= addr {
		return &ms[i]
	}
	return nil
}

// elfSym is a function symbol of an ELF file.
type elfSym struct {
	value, size uint64
	name        string
}

// elfSymbols is the function table of one ELF file, with its loadable
// segments to turn file offsets into virtual addresses.
type elfSymbols struct {
	syms  []elfSym
	loads []elf.ProgHeader
}

// readELFSymbols reads the function symbols of .symtab and .dynsym.
func readELFSymbols(r io.ReaderAt) (*elfSymbols, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("open elf: %w", err)
	}
	defer f.Close()
	es := &elfSymbols{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			es.loads = append(es.loads, p.ProgHeader)
		}
	}
	seen := map[uint64]bool{}
	add := func(syms []elf.Symbol) int {
		n := 0
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Section == elf.SHN_UNDEF || seen[s.Value] {
				continue
			}
			seen[s.Value] = true
			es.syms = append(es.syms, elfSym{value: s.Value, size: s.Size, name: s.Name})
			n++
		}
		return n
	}
	// Errors are ErrNoSymbols: a stripped file has one table or none.
	syms, _ := f.Symbols()
	symtab := add(syms)
	dyn, _ := f.DynamicSymbols()
	add(dyn)
	// A Go binary linked with -s (as `go test` and `go run` do, and many
	// release builds) has no .symtab but always its .gopclntab.
	if symtab == 0 {
		for _, fn := range goFuncs(f) {
			if !seen[fn.value] {
				seen[fn.value] = true
				es.syms = append(es.syms, fn)
			}
		}
	}
	sort.Slice(es.syms, func(i, j int) bool { return es.syms[i].value < es.syms[j].value })
	return es, nil
}

// goFuncs reads the functions of a Go binary's pclntab, or none.
func goFuncs(f *elf.File) []elfSym {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil
	}
	if pcln.Type == elf.SHT_NOBITS || pcln.Size > 1<<30 || pcln.Flags&elf.SHF_COMPRESSED != 0 {
		return nil
	}
	data := make([]byte, pcln.Size) // ReadAt at once: Data() grows its buffer in steps
	if _, err := pcln.ReadAt(data, 0); err != nil {
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil
	}
	out := make([]elfSym, 0, len(tab.Funcs))
	for _, fn := range tab.Funcs {
		if fn.Entry == 0 || fn.End <= fn.Entry {
			continue
		}
		out = append(out, elfSym{value: fn.Entry, size: fn.End - fn.Entry, name: fn.Name})
	}
	return out
}

// vaddr turns a file offset into the ELF virtual address through the
// executable PT_LOAD segment holding it (PIE or not: the mapping's start
// and offset gave the file offset).
func (es *elfSymbols) vaddr(fileOff uint64) (uint64, bool) {
	for _, p := range es.loads {
		if fileOff >= p.Off && fileOff < p.Off+p.Filesz {
			return fileOff - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// lookup returns the function holding the runtime address addr of
// mapping m.
func (es *elfSymbols) lookup(m *mapping, addr uint64) (string, bool) {
	if es == nil || addr < m.start {
		return "", false
	}
	va, ok := es.vaddr(addr - m.start + m.offset)
	if !ok {
		return "", false
	}
	i := sort.Search(len(es.syms), func(i int) bool { return es.syms[i].value > va })
	if i == 0 {
		return "", false
	}
	s := es.syms[i-1]
	if s.size != 0 && va >= s.value+s.size {
		return "", false
	}
	return s.name, true
}
