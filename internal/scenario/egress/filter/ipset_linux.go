package filter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"github.com/cnibench/cnibench/internal/ipset"
	"github.com/cnibench/cnibench/internal/nf"
	"github.com/cnibench/cnibench/internal/scenario"
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

func init() {
	Register("ipset", func() Mechanism { return ipsetMechanism{name: "ipset"} })
	Register(MechIPSetDefault, func() Mechanism {
		return ipsetMechanism{name: MechIPSetDefault, maxelem: IPSetDefaultMaxelem}
	})
	Register(MechCalicoLike, func() Mechanism {
		return ipsetMechanism{name: MechCalicoLike, maxelem: CalicoMaxIPSetSize, calico: true}
	})
}

// ipsetMechanism filters with one hash:net set and one iptables (nft
// backend) rule matching it. The set is created and filled over netlink in
// the ipset protocol, entries aggregated in ADT requests as `ipset restore`
// aggregates its lines, without formatting and parsing text (internal/ipset);
// `make bench` compares it with `ipset restore` of the same set.
//
// ipset sizes maxelem to N + ipsetHeadroom (ipsetSizes), so it never fills;
// ipset-default and calico-like fix maxelem (the kernel's default, Calico's
// MaxIpsetSize) and a deny set that does not fit is refused by the kernel
// ("Hash is full"): the point is "too large" with the kernel's error
// (errHashFull). calico-like matches the set from Calico-shaped chains
// (calicoRules).
type ipsetMechanism struct {
	name    string
	maxelem int // 0: sized to N (ipsetSizes)
	calico  bool
}

func (m ipsetMechanism) Name() string { return m.name }

// MaxRules is ipsetMaxRules for every variant: a fixed maxelem is the
// kernel's to enforce, so N above it runs and records the kernel's refusal.
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

// ipsetToolHashsize is the ipset tool's default initial hashsize.
const ipsetToolHashsize = 1024

// errHashFull turns the kernel's hash-full refusal of adding to set name
// (maxelem entries) into a "too large" error naming it; other errors are
// returned as they are.
func errHashFull(err error, name string, maxelem int) error {
	var e syscall.Errno
	if errors.As(err, &e) && e == ipset.ErrHashFull {
		return hashFull(err, name, maxelem)
	}
	return err
}

// hashFull is the "too large" error of a set (mechanism name, maxelem
// entries) the kernel refused to fill, err its refusal.
func hashFull(err error, name string, maxelem int) error {
	return fmt.Errorf("%w: %s: ipset hash:net with maxelem %d: the kernel refused: %w", scenario.ErrTooLarge, name, maxelem, err)
}

func (m ipsetMechanism) Load(ctx context.Context, t Target, cidrs []netip.Prefix, o Options) (Filter, LoadInfo, error) {
	f := &ipsetFilter{iptFilter: iptFilter{t: t, tool: iptNFT, bypass: o.EstablishedBypass, counterChain: chainEgress, rules: len(cidrs)}, name: m.name}
	if m.calico {
		// Calico's chains: its leading accept (always new-connection), the
		// drop counted in the policy chain (cleaned up with chainEgress).
		f.bypass, f.counterChain, f.drop = true, chainCaliPolicy, chainCaliPolicy
	}
	if err := f.noteTable(); err != nil {
		return nil, LoadInfo{}, err
	}
	nl, err := ipset.Dial(t.NSFd)
	if err != nil {
		return nil, LoadInfo{}, err
	}
	f.nl = nl
	hashsize, maxelem := ipsetSizes(len(cidrs))
	method := ""
	batches := 0
	if m.maxelem > 0 {
		// A fixed limit (the tool's default, Calico's): the set is made and
		// filled by `ipset restore`, as Felix programs Calico's sets, with
		// the tool's initial hashsize. The kernel checks maxelem against a
		// count it sums lazily over the regions of its hash: a set filled
		// by this package's own netlink batches took 65 537 entries of
		// maxelem 65 536 on kernel 6.18 without an error, where the tool's
		// restore is refused at its 65 537th line ("Hash is full").
		f.maxelem = m.maxelem
		if err := ipsetRestore(ctx, t, ipsetName, ipsetToolHashsize, m.maxelem, cidrs); err != nil {
			_, derr := runIn(ctx, t, nil, "ipset", "destroy", ipsetName)
			if strings.Contains(err.Error(), "Hash is full") {
				err = hashFull(err, m.name, m.maxelem)
			} else if derr != nil && !strings.Contains(derr.Error(), "does not exist") {
				err = errors.Join(err, derr)
			}
			return nil, LoadInfo{}, errors.Join(err, nl.Close())
		}
		method = fmt.Sprintf("ipset restore (hash:net hashsize %d maxelem %d)", ipsetToolHashsize, m.maxelem)
		batches = 1
	} else {
		f.maxelem = maxelem
		rev, err := nl.Create(ipsetName, hashsize, maxelem)
		if err != nil {
			return nil, LoadInfo{}, errors.Join(err, nl.Close())
		}
		reqs, err := nl.Add(ctx, ipsetName, cidrs)
		if err != nil {
			return nil, LoadInfo{}, errors.Join(errHashFull(fmt.Errorf("load %d cidrs into ipset %s: %w", len(cidrs), ipsetName, err), m.name, maxelem),
				f.destroySet(), nl.Close())
		}
		method = fmt.Sprintf("ipset netlink protocol, %d ADT requests of <= %d entries (hash:net revision %d hashsize %d maxelem %d)", reqs, ipset.PerMsg, rev, hashsize, maxelem)
		batches = reqs + 1
	}
	var rules []byte
	chains := "+ one set-match rule"
	if m.calico {
		rules, chains = calicoRules(ipsetName, f.jump(1)), "+ Calico-shaped workload and policy chains"
	} else {
		var r lineBuffer
		r.Write("*filter")
		r.Write(":"+chainEgress, "-", "[0:0]")
		f.writeBypass(&r)
		r.Write("-A", chainEgress, "-m", "set", "--match-set", ipsetName, "dst", "-j", "DROP")
		r.Write(append([]string{"-I"}, f.jump(1)...)...)
		r.Write("COMMIT")
		rules = r.Bytes()
	}
	ruleRes, err := runIn(ctx, t, rules, iptNFT.restore, "--noflush", "-w")
	if err != nil {
		cctx := context.WithoutCancel(ctx)
		return nil, LoadInfo{}, errors.Join(fmt.Errorf("load the set-match rule: %w", err),
			f.cleanup(cctx, false), f.destroySet(), nl.Close())
	}
	f.attached = true
	return f, LoadInfo{
		Traversal:     f.traversal(),
		Method:        fmt.Sprintf("%s + %s --noflush %s", method, iptNFT.restore, chains),
		Batches:       batches + 1, // + the rule
		LoaderPeakRSS: ruleRes.PeakRSS,
	}, nil
}

// ipsetFilter is the set plus the iptables chain that matches it; Detach and
// Attach (from iptFilter) remove and restore only the FORWARD jump.
type ipsetFilter struct {
	iptFilter
	nl      *ipset.Conn
	name    string // the mechanism's
	maxelem int
}

func (f *ipsetFilter) Add(ctx context.Context, p netip.Prefix) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := f.nl.AddOne(ipsetName, p); err != nil {
		return errHashFull(fmt.Errorf("add deny cidr %s: %w", p, err), f.name, f.maxelem)
	}
	f.rules++
	return nil
}

func (f *ipsetFilter) Remove(ctx context.Context, p netip.Prefix) error {
	if err := f.check(); err != nil {
		return err
	}
	if err := f.nl.DelOne(ipsetName, p); err != nil {
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
	if s.KernelBytes, err = nf.ParseIPSetMemory(res.Stdout); err != nil {
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
	if err := f.nl.Destroy(ipsetName); err != nil {
		return fmt.Errorf("destroy ipset %s: %w", ipsetName, err)
	}
	return nil
}

// ipsetRestore creates set name (hash:net) and adds cidrs with one
// `ipset restore` in t's namespace.
func ipsetRestore(ctx context.Context, t Target, name string, hashsize, maxelem int, cidrs []netip.Prefix) error {
	var b strings.Builder
	fmt.Fprintf(&b, "create %s hash:net family inet hashsize %d maxelem %d\n", name, hashsize, maxelem)
	for _, p := range cidrs {
		fmt.Fprintf(&b, "add %s %s\n", name, p)
	}
	_, err := runIn(ctx, t, []byte(b.String()), "ipset", "restore")
	return err
}
