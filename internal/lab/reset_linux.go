package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// namespaces returns the topology's node and pod namespaces, each once.
func (t *Topology) namespaces() []*NS {
	var out []*NS
	seen := map[*NS]bool{}
	add := func(n *NS) {
		if n != nil && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range t.Nodes {
		add(n)
	}
	for _, p := range t.Paths {
		add(p.Client)
		add(p.Server)
	}
	return out
}

// ResetState gives the next measurement a clean start: it flushes the
// connection-tracking table of every node and pod namespace of the topology
// (through their netlink handles), so that entries left by one cell do not
// slow down or inflate the next. TIME_WAIT sockets cannot be removed (they
// last 60 s); read them with TimeWait and record them per cell instead.
func (t *Topology) ResetState(ctx context.Context) error {
	var errs []error
	for _, n := range t.namespaces() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n.handle == nil {
			continue
		}
		err := n.handle.ConntrackTableFlush(netlink.ConntrackTable)
		// A namespace where conntrack was never engaged has nothing to flush.
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EOPNOTSUPP) {
			errs = append(errs, fmt.Errorf("flush conntrack in %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// TimeWait returns the number of TCP sockets in TIME_WAIT summed over the
// topology's namespaces (the "tw" field of each namespace's
// /proc/net/sockstat).
func (t *Topology) TimeWait() (int, error) {
	total := 0
	for _, n := range t.namespaces() {
		var b []byte
		err := n.Do(func() error {
			var err error
			// thread-self: /proc/self/net is the main thread's namespace.
			b, err = os.ReadFile("/proc/thread-self/net/sockstat")
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("read sockstat: %w", err)
		}
		tw, err := parseSockstatTW(b)
		if err != nil {
			return 0, fmt.Errorf("sockstat of %s: %w", n.Name, err)
		}
		total += tw
	}
	return total, nil
}

// parseSockstatTW returns the "tw" count of the TCP line of
// /proc/net/sockstat ("TCP: inuse 3 orphan 0 tw 12 alloc 5 mem 1").
func parseSockstatTW(b []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(f); i += 2 {
			if f[i] == "tw" {
				v, err := strconv.Atoi(f[i+1])
				if err != nil || v < 0 {
					return 0, fmt.Errorf("bad tw count %q", f[i+1])
				}
				return v, nil
			}
		}
		return 0, errors.New("TCP line without a tw field")
	}
	return 0, errors.New("no TCP line")
}
