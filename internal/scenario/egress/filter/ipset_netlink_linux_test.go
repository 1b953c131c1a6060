package filter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/cnibench/cnibench/internal/ipset"
	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// ipsetScratch is a scratch namespace as a Target (for runIn) that the
// test closes.
func ipsetScratch(t *testing.T) Target {
	t.Helper()
	ns, err := nsrun.NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return Target{NSFd: int(ns), Do: func(f func() error) error { return nsrun.Do(netns.NsHandle(ns), f) }}
}

// TestIPSetNetlinkMatchesRestore loads the same set with the netlink loader
// and with `ipset restore` into two namespaces: `ipset save` must print the
// same set (header and members; the hash seed and hashsize, which the
// kernel may double while filling, apart), so the two loaders `make bench`
// compares build the same thing. A duplicate, a delete of a missing entry and a
// second create fail with the kernel's reason.
func TestIPSetNetlinkMatchesRestore(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	testutil.NeedProgram(t, "ipset")
	ctx := context.Background()
	cidrs, err := Generate(5, 6000, DeniedAddr)
	if err != nil {
		t.Fatal(err)
	}
	hashsize, maxelem := ipsetSizes(len(cidrs))

	a := ipsetScratch(t)
	c, err := ipset.Dial(a.NSFd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ipsetName, hashsize, maxelem); err != nil {
		t.Fatal(err)
	}
	n, err := c.Add(ctx, ipsetName, cidrs)
	if err != nil {
		t.Fatal(err)
	}
	if want := (len(cidrs) + ipset.PerMsg - 1) / ipset.PerMsg; n != want {
		t.Errorf("%d requests, want %d", n, want)
	}

	b := ipsetScratch(t)
	var text lineBuffer
	text.Write("create", ipsetName, "hash:net", "family", "inet", "hashsize", fmt.Sprint(hashsize), "maxelem", fmt.Sprint(maxelem))
	for _, p := range cidrs {
		text.Write("add", ipsetName, p.String())
	}
	if _, err := runIn(ctx, b, text.Bytes(), "ipset", "restore"); err != nil {
		t.Fatal(err)
	}
	save := func(tg Target) []string {
		res, err := runIn(ctx, tg, nil, "ipset", "save", ipsetName)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
		for i, l := range lines {
			if !strings.HasPrefix(l, "create ") {
				continue
			}
			// initval is the hash's random seed, different in every set;
			// with it, whether the kernel doubled hashsize while filling
			// (a bucket over bucketsize) differs too: compared apart.
			if j := strings.Index(l, " initval 0x"); j >= 0 {
				l = l[:j]
			}
			f := strings.Fields(l)
			for k := 0; k+1 < len(f); k++ {
				if f[k] == "hashsize" {
					if hs, err := strconv.Atoi(f[k+1]); err != nil || hs < hashsize {
						t.Errorf("create line %q: hashsize below the %d asked for", l, hashsize)
					}
					f = append(f[:k], f[k+2:]...)
					break
				}
			}
			lines[i] = strings.Join(f, " ")
		}
		slices.Sort(lines)
		return lines
	}
	got, want := save(a), save(b)
	if len(got) != len(cidrs)+1 {
		t.Fatalf("netlink loader: ipset save has %d lines, want %d", len(got), len(cidrs)+1)
	}
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("ipset save differs at sorted line %d: netlink %q, ipset restore %q", i, got[i], want[i])
			}
		}
		t.Fatalf("ipset save: netlink %d lines, ipset restore %d", len(got), len(want))
	}

	// The kernel's refusals come back named.
	var errno syscall.Errno
	if err := c.AddOne(ipsetName, cidrs[7]); !errors.As(err, &errno) || errno != 4103 || !strings.Contains(err.Error(), "exists") {
		t.Errorf("duplicate add: %v, want ipset error 4103 named", err)
	}
	extra := netip.MustParsePrefix("255.255.255.254/31")
	if err := c.DelOne(ipsetName, extra); err == nil {
		t.Error("delete of a missing entry: no error")
	}
	if err := c.AddOne(ipsetName, extra); err != nil {
		t.Fatal(err)
	}
	if err := c.DelOne(ipsetName, extra); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ipsetName, hashsize, maxelem); err == nil {
		t.Error("second create: no error")
	}
	if err := c.Destroy(ipsetName); err != nil {
		t.Fatal(err)
	}
	if res, err := runIn(ctx, a, nil, "ipset", "list", "-n"); err != nil || strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("after destroy: ipset list -n = %q, %v; want nothing", res.Stdout, err)
	}
}
