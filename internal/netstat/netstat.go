// Package netstat reads the kernel's per-namespace protocol counters
// (/proc/net/netstat, /proc/net/snmp).
package netstat

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads /proc/net/netstat (or /proc/net/snmp): pairs of lines
// "Prefix: name name …" and "Prefix: value value …". Keys are
// "Prefix:name" (e.g. "TcpExt:PAWSTimewait").
func Parse(text string) (map[string]uint64, error) {
	out := map[string]uint64{}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines)%2 != 0 {
		return nil, fmt.Errorf("netstat: %d lines, want header/value pairs", len(lines))
	}
	for i := 0; i < len(lines); i += 2 {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || len(names) != len(values) || names[0] != values[0] || !strings.HasSuffix(names[0], ":") {
			return nil, fmt.Errorf("netstat line %d: header and values do not pair up", i+1)
		}
		for j := 1; j < len(names); j++ {
			v, err := strconv.ParseUint(values[j], 10, 64)
			if err != nil {
				// Some counters (e.g. Tcp:MaxConn) are signed; they are not
				// ones this package reads.
				continue
			}
			out[names[0]+names[j]] = v
		}
	}
	return out, nil
}
