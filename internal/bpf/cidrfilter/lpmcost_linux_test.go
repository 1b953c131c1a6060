//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package cidrfilter

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/cnibench/cnibench/internal/testutil"
)

// TestLPMInsertCost measures what the kernel's LPM trie charges per
// inserted element, apart from cnibench's loader: /24 keys, one per /24 of
// 240.0.0.0/4, into a bare LPM_TRIE map with BPF_MAP_UPDATE_BATCH of 65,536,
// for N = 4,096 ... 1,048,576 in ascending, descending and shuffled order.
// A cost per element that stays flat with N and order is the kernel's
// per-insert floor, and it bounds any loader: 1M CIDRs in 0.3 s need
// 0.3 µs per element. Manual only (internal/bpf/cidrfilter/README.md):
//
//	CNIBENCH_EGRESS_BIG=1 go test -count=1 -v -run TestLPMInsertCost ./internal/bpf/cidrfilter/
func TestLPMInsertCost(t *testing.T) {
	if os.Getenv("CNIBENCH_EGRESS_BIG") != "1" {
		t.Skip("manual measurement: set CNIBENCH_EGRESS_BIG=1")
	}
	testutil.SkipUnlessRoot(t)
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1 << 12, 1 << 15, 1 << 18, 1 << 20} {
		keys := make([]prefixKey, n)
		for i := range keys {
			keys[i].PrefixLen = 24
			binary.BigEndian.PutUint32(keys[i].Addr[:], 0xf0000000+uint32(i)<<8)
		}
		for _, order := range []string{"ascending", "descending", "shuffled"} {
			switch order {
			case "descending":
				for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
					keys[i], keys[j] = keys[j], keys[i]
				}
			case "shuffled":
				rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			}
			m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 1,
				MaxEntries: uint32(n), Flags: 1 /* BPF_F_NO_PREALLOC */})
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]uint8, min(n, DefaultBatch))
			start := time.Now()
			for i := 0; i < n; i += DefaultBatch {
				j := min(i+DefaultBatch, n)
				if _, err := m.BatchUpdate(keys[i:j], vals[:j-i], nil); err != nil {
					m.Close()
					t.Fatal(err)
				}
			}
			d := time.Since(start)
			m.Close()
			t.Logf("N=%7d %-10s %8.1f ms  %5.0f ns/element", n, order, float64(d.Microseconds())/1e3, float64(d.Nanoseconds())/float64(n))
		}
	}
}
