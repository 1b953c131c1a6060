package nf

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseDropCounter reads the packet counter of the first rule whose target
// is DROP from `iptables -L CHAIN -v -x -n` output.
func ParseDropCounter(out string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] == "Chain" || f[0] == "pkts" {
			continue
		}
		if f[2] != "DROP" {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse packet counter %q: %w", f[0], err)
		}
		return n, nil
	}
	return 0, errors.New("no DROP rule in the chain listing")
}

// ParseIPSetMemory reads "Size in memory: N" from `ipset list -t` output.
func ParseIPSetMemory(out string) (int64, error) {
	const key = "Size in memory:"
	for line := range strings.Lines(out) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), key)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("parse ipset %q %q: not a byte count", key, strings.TrimSpace(v))
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %q line in ipset list output", key)
}
