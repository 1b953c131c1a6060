package profile

import (
	"os"
	"sync"
	"time"
)

// The symbol tables of mapped files are kept across sessions (a suite
// profiles every cell, and the same binaries run in each), keyed by the
// file's identity, size and modification time, up to symCacheMax symbols
// in all; the least recently used go first.
const symCacheMax = 4 << 20

type symCacheKey struct {
	file  fileKey
	size  int64
	mtime time.Time
}

type symCacheEntry struct {
	key  symCacheKey
	syms *elfSymbols // nil: not an ELF file
	used uint64
}

var symCache = struct {
	sync.Mutex
	m     map[symCacheKey]*symCacheEntry
	total int
	clock uint64
}{m: map[symCacheKey]*symCacheEntry{}}

// cachedSymbols returns the symbols of the mapped file k opened as f.
func cachedSymbols(k fileKey, f fileReader) *elfSymbols {
	st, ok := f.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return readSymbolsOrNil(f)
	}
	fi, err := st.Stat()
	if err != nil {
		return readSymbolsOrNil(f)
	}
	key := symCacheKey{file: k, size: fi.Size(), mtime: fi.ModTime()}
	symCache.Lock()
	symCache.clock++
	if e, ok := symCache.m[key]; ok {
		e.used = symCache.clock
		symCache.Unlock()
		return e.syms
	}
	symCache.Unlock()
	es := readSymbolsOrNil(f)
	n := 1
	if es != nil {
		n += len(es.syms)
	}
	symCache.Lock()
	defer symCache.Unlock()
	if _, ok := symCache.m[key]; !ok {
		symCache.m[key] = &symCacheEntry{key: key, syms: es, used: symCache.clock}
		symCache.total += n
	}
	for symCache.total > symCacheMax && len(symCache.m) > 1 {
		var old *symCacheEntry
		for _, e := range symCache.m {
			if old == nil || e.used < old.used {
				old = e
			}
		}
		delete(symCache.m, old.key)
		symCache.total -= 1 + old.size()
	}
	return es
}

func (e *symCacheEntry) size() int {
	if e.syms == nil {
		return 0
	}
	return len(e.syms.syms)
}

// readSymbolsOrNil reads an ELF file's symbols; nil if it is not ELF or
// unreadable (its frames stay [unknown]).
func readSymbolsOrNil(f fileReader) *elfSymbols {
	es, err := readELFSymbols(f)
	if err != nil {
		return nil
	}
	return es
}
