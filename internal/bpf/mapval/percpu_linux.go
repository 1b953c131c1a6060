package mapval

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// SumPerCPU reads the first n entries of a per-CPU array of u64 counters
// and sums each over the CPUs.
func SumPerCPU(m *ebpf.Map, n int) ([]uint64, error) {
	out := make([]uint64, n)
	for i := range out {
		per, err := PerCPU(m, i)
		if err != nil {
			return nil, err
		}
		for _, v := range per {
			out[i] += v
		}
	}
	return out, nil
}

// PerCPU reads entry i of a per-CPU array of u64 counters: one value per
// possible CPU, indexed by CPU number.
func PerCPU(m *ebpf.Map, i int) ([]uint64, error) {
	var per []uint64
	if err := m.Lookup(uint32(i), &per); err != nil {
		return nil, fmt.Errorf("read counter %d of %v: %w", i, m, err)
	}
	return per, nil
}
