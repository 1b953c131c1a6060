package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRate parses an offered load: a number with an optional SI suffix
// (k, M, G, T; powers of 1000) and an optional unit word ("bit", "bps",
// "bit/s", "/s", "tps"), e.g. "10G", "1Gbit", "500M", "20k".
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, suf := range []string{"bit/s", "bits/s", "bps", "bit", "bits", "trans/s", "tps", "/s"} {
		if strings.HasSuffix(strings.ToLower(t), suf) {
			t = t[:len(t)-len(suf)]
			break
		}
	}
	t = strings.TrimSpace(t)
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1e3
		case 'm', 'M':
			mult = 1e6
		case 'g', 'G':
			mult = 1e9
		case 't', 'T':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a rate; use a number with an optional k/M/G suffix, e.g. 10G or 50k", s)
	}
	return v * mult, nil
}

// ParseSize parses a byte count with an optional binary suffix (K, M: powers
// of 1024), e.g. "1470", "64K", "1M".
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	mult := 1
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.Atoi(t)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size; use bytes with an optional K or M suffix, e.g. 1470 or 64K", s)
	}
	return v * mult, nil
}
