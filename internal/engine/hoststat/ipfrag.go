package hoststat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// IPFrag is a network namespace's IP fragmentation and reassembly counters
// (/proc/net/snmp "Ip:" for IPv4, /proc/net/snmp6 "Ip6…" for IPv6).
type IPFrag struct {
	FragCreates uint64 `json:"frag_creates"` // fragments created
	FragOKs     uint64 `json:"frag_oks"`     // datagrams fragmented
	ReasmReqds  uint64 `json:"reasm_reqds"`  // fragments needing reassembly
	ReasmOKs    uint64 `json:"reasm_oks"`    // datagrams reassembled
	ReasmFails  uint64 `json:"reasm_fails"`  // reassembly failures
}

// Sub returns f − g field by field (a counter that went backwards gives 0).
func (f IPFrag) Sub(g IPFrag) IPFrag {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return IPFrag{d(f.FragCreates, g.FragCreates), d(f.FragOKs, g.FragOKs), d(f.ReasmReqds, g.ReasmReqds),
		d(f.ReasmOKs, g.ReasmOKs), d(f.ReasmFails, g.ReasmFails)}
}

// Add returns f + g.
func (f IPFrag) Add(g IPFrag) IPFrag {
	return IPFrag{f.FragCreates + g.FragCreates, f.FragOKs + g.FragOKs, f.ReasmReqds + g.ReasmReqds,
		f.ReasmOKs + g.ReasmOKs, f.ReasmFails + g.ReasmFails}
}

// ParseSNMP reads the IPv4 fragmentation counters from a /proc/net/snmp
// listing (an "Ip:" header line followed by an "Ip:" value line).
func ParseSNMP(r io.Reader) (IPFrag, error) {
	sc := bufio.NewScanner(r)
	var names []string
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 || fs[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = fs[1:]
			continue
		}
		vals := fs[1:]
		if len(vals) != len(names) {
			return IPFrag{}, fmt.Errorf("snmp Ip: %d names but %d values", len(names), len(vals))
		}
		kv := map[string]string{}
		for i, n := range names {
			kv[n] = vals[i]
		}
		return fragFrom(kv, "")
	}
	if err := sc.Err(); err != nil {
		return IPFrag{}, err
	}
	return IPFrag{}, fmt.Errorf("snmp has no Ip: counters")
}

// ParseSNMP6 reads the IPv6 fragmentation counters from /proc/net/snmp6
// ("Ip6FragCreates 0" lines).
func ParseSNMP6(r io.Reader) (IPFrag, error) {
	sc := bufio.NewScanner(r)
	kv := map[string]string{}
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 2 && strings.HasPrefix(fs[0], "Ip6") {
			kv[fs[0]] = fs[1]
		}
	}
	if err := sc.Err(); err != nil {
		return IPFrag{}, err
	}
	return fragFrom(kv, "Ip6")
}

func fragFrom(kv map[string]string, prefix string) (IPFrag, error) {
	var f IPFrag
	for _, c := range []struct {
		name string
		dst  *uint64
	}{
		{"FragCreates", &f.FragCreates}, {"FragOKs", &f.FragOKs}, {"ReasmReqds", &f.ReasmReqds},
		{"ReasmOKs", &f.ReasmOKs}, {"ReasmFails", &f.ReasmFails},
	} {
		s, ok := kv[prefix+c.name]
		if !ok {
			return IPFrag{}, fmt.Errorf("snmp has no %s%s counter", prefix, c.name)
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return IPFrag{}, fmt.Errorf("snmp %s%s %q: %w", prefix, c.name, s, err)
		}
		*c.dst = v
	}
	return f, nil
}

// ReadIPFrag reads the calling process's network namespace's IPv4 and
// IPv6 fragmentation counters, summed (a test uses one family; the
// other's counters stay still).
func ReadIPFrag() (IPFrag, error) {
	f, err := os.Open("/proc/self/net/snmp")
	if err != nil {
		return IPFrag{}, fmt.Errorf("read IP fragmentation counters: %w", err)
	}
	defer f.Close()
	v4, err := ParseSNMP(f)
	if err != nil {
		return IPFrag{}, fmt.Errorf("read IP fragmentation counters: %w", err)
	}
	f6, err := os.Open("/proc/self/net/snmp6")
	if err != nil {
		return v4, nil // no IPv6 in this kernel
	}
	defer f6.Close()
	v6, err := ParseSNMP6(f6)
	if err != nil {
		return IPFrag{}, fmt.Errorf("read IPv6 fragmentation counters: %w", err)
	}
	return v4.Add(v6), nil
}

// ReadBootID returns the kernel's boot id: two processes with the same one
// run on the same host (whatever their namespaces).
func ReadBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
