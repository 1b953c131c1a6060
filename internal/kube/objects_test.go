package kube

import (
	"net/netip"
	"testing"
)

func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func TestObjectBytes(t *testing.T) {
	if got := ObjectBytes(map[string]int{"a": 1}); got != len(`{"a":1}`) {
		t.Errorf("ObjectBytes = %d", got)
	}
	if got := ObjectBytes(func() {}); got != 0 {
		t.Errorf("unencodable: %d", got)
	}
}
