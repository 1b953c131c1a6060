package profile

import (
	"os"
	"reflect"
	"runtime"
	"testing"
)

//go:noinline
func symbolTarget(x int) int { return x*3 + 1 }

// TestSymbolizeSelf resolves the address of a function of this test binary
// through /proc/self/maps and the binary's ELF symbols, as build does for
// samples.
func TestSymbolizeSelf(t *testing.T) {
	pc := reflect.ValueOf(symbolTarget).Pointer()
	want := runtime.FuncForPC(pc).Name()
	src := procFS{root: "/proc"}
	pid := uint32(os.Getpid())
	ms, err := src.maps(pid)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		addr uint64
		want string
	}{
		{"entry", uint64(pc), want},
		{"inside", uint64(pc) + 4, want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := findMapping(ms, tt.addr)
			if m == nil {
				t.Fatalf("no executable mapping holds %#x", tt.addr)
			}
			f, err := src.open(pid, m)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			es, err := readELFSymbols(f)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := es.lookup(m, tt.addr)
			if !ok || got != tt.want {
				t.Errorf("lookup(%#x) = %q, %v; want %q (mapping %+v, %d symbols, loads %+v)", tt.addr, got, ok, tt.want, *m, len(es.syms), es.loads)
			}
		})
	}
}
