package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// ipsetName is the set the ipset mechanism creates. IP sets are per network
// namespace, so one fixed name cannot collide across lab namespaces.
const ipsetName = "cnb-egress"

// ipsetMaxRules: a hash:net set holds 10M entries in a few hundred MB of
// kernel memory and the netlink loader streams them in 64 KiB requests
// built from the prefixes (about 24 bytes each), so 10M, the largest N of
// issue 10, is run.
const ipsetMaxRules = 10_000_000

// ipsetHeadroom is room left in maxelem for Add after a full load.
const ipsetHeadroom = 1024

func init() { Register("ipset", func() Mechanism { return ipsetMechanism{} }) }

// ipsetMechanism filters with one hash:net set and one iptables (nft
// backend) rule matching it. The set is created and filled over netlink in
// the ipset protocol, entries aggregated in ADT requests as `ipset restore`
// aggregates its lines, without formatting and parsing text (ipsetnl.go);
// `make bench` compares it with `ipset restore` of the same set.
type ipsetMechanism struct{}

func (ipsetMechanism) Name() string  { return "ipset" }
func (ipsetMechanism) MaxRules() int { return ipsetMaxRules }

func (ipsetMechanism) Probe() error {
	if err := needPrograms("ipset", "ipset"); err != nil {
		return err
	}
	return iptNFT.probe()
}

// ipsetSizes returns the hashsize (buckets, a power of two: about four
// entries per bucket, at least the kernel's default 1024) and maxelem for n
// entries.
func ipsetSizes(n int) (hashsize, maxelem int) {
	return ceilPow2(max(n/4, 1024)), max(n+ipsetHeadroom, 65536)
}

func (ipsetMechanism) Load(ctx context.Context, t Target, cidrs []netip.Prefix, o Options) (Filter, LoadInfo, error) {
	f := &ipsetFilter{iptFilter: iptFilter{t: t, tool: iptNFT, bypass: o.EstablishedBypass, counterChain: chainEgress, rules: len(cidrs)}}
	if err := f.noteTable(); err != nil {
		return nil, LoadInfo{}, err
	}
	nl, err := dialIPSet(t.NSFd)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	f.nl = nl
	hashsize, maxelem := ipsetSizes(len(cidrs))
	rev, err := nl.create(ipsetName, hashsize, maxelem)
	if err != nil {
		return nil, LoadInfo{}, errors.Join(err, nl.Close())
	}
	reqs, err := nl.add(ctx, ipsetName, cidrs)
	if err != nil {
		return nil, LoadInfo{}, errors.Join(fmt.Errorf("load %d cidrs into ipset %s: %w", len(cidrs), ipsetName, err),
			f.destroySet(), nl.Close())
	}
	var r lineBuffer
	r.Write("*filter")
	r.Write(":"+chainEgress, "-", "[0:0]")
	f.writeBypass(&r)
	r.Write("-A", chainEgress, "-m", "set", "--match-set", ipsetName, "dst", "-j", "DROP")
	r.Write(append([]string{"-I"}, f.jump(1)...)...)
	r.Write("COMMIT")
	ruleRes, err := runIn(ctx, t, r.Bytes(), iptNFT.restore, "--noflush", "-w")
	if err != nil {
		cctx := context.WithoutCancel(ctx)
		return nil, LoadInfo{}, errors.Join(fmt.Errorf("load the set-match rule: %w", err),
			f.cleanup(cctx, false), f.destroySet(), nl.Close())
	}
	f.attached = true
	return f, LoadInfo{
		Traversal: f.traversal(),
		Method: fmt.Sprintf("ipset netlink protocol, %d ADT requests of <= %d entries (hash:net revision %d hashsize %d maxelem %d) + %s --noflush",
			reqs, ipsetPerMsg, rev, hashsize, maxelem, iptNFT.restore),
		Batches:       reqs + 2, // + create, + the rule
		LoaderPeakRSS: ruleRes.PeakRSS,
	}, nil
}

// ipsetFilter is the set plus the iptables chain that matches it; Detach and
// Attach (from iptFilter) remove and restore only the FORWARD jump.
type ipsetFilter struct {
	iptFilter
	nl *ipsetConn
}

func (f *ipsetFilter) Add(ctx context.Context, p netip.Prefix) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := f.nl.one(ipsetCmdAdd, ipsetName, p); err != nil {
		return fmt.Errorf("add deny cidr %s: %w", p, err)
	}
	f.rules++
	return nil
}

func (f *ipsetFilter) Remove(ctx context.Context, p netip.Prefix) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := f.nl.one(ipsetCmdDel, ipsetName, p); err != nil {
		return fmt.Errorf("remove deny cidr %s: %w", p, err)
	}
	f.rules--
	return nil
}

func (f *ipsetFilter) Stats(ctx context.Context) (Stats, error) {
	s, err := f.iptFilter.Stats(ctx)
	if err != nil {
		return Stats{}, err
	}
	res, err := runIn(ctx, f.t, nil, "ipset", "list", "-t", ipsetName)
	if err != nil {
		return Stats{}, fmt.Errorf("read ipset %s size: %w", ipsetName, err)
	}
	if s.KernelBytes, err = parseIPSetMemory(res.Stdout); err != nil {
		return Stats{}, fmt.Errorf("read ipset %s size: %w", ipsetName, err)
	}
	s.KernelBytesKnown = true
	return s, nil
}

func (f *ipsetFilter) Close(ctx context.Context) error {
	if f.closed {
		return nil
	}
	err := f.iptFilter.Close(ctx)
	// The set can only go once no rule references it.
	return errors.Join(err, f.destroySet(), f.nl.Close())
}

func (f *ipsetFilter) destroySet() error {
	if err := f.nl.destroy(ipsetName); err != nil {
		return fmt.Errorf("destroy ipset %s: %w", ipsetName, err)
	}
	return nil
}
