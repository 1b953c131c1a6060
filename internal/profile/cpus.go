package profile

import (
	"fmt"
	"strconv"
	"strings"
)

// parseCPUList parses the kernel's CPU list format
// (/sys/devices/system/cpu/online: "0-3,6,8-9").
func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list")
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: bad CPU %q", truncate(s, 40), truncate(lo, 20))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: bad range %q", truncate(s, 40), truncate(part, 20))
			}
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("CPU list %q: range %q too large", truncate(s, 40), truncate(part, 20))
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
