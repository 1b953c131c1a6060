package filter

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cnibench/cnibench/internal/nf"
)

// iptablesMaxRules bounds the legacy backend at 1M rules: it copies the
// whole table blob between user space and the kernel for every change, so
// each Add/Remove/Stats takes about 1.7 s at 1M (measured: load 3.2 s,
// loader RSS 376 MiB).
const iptablesMaxRules = 1_000_000

// iptablesNFTMaxRules bounds the nft backend at 100k rules: every rule is an
// nf_tables rule object with its own expressions; measured here, 100k rules
// load in 2.1 s (iptables-nft-restore RSS 129 MiB) but deleting one rule
// takes 9–16 s (iptables-nft reads the whole chain back first), and a 1M
// load had not finished after 7 minutes (590 MB RSS). Larger N are recorded
// "too large" with this reason.
const iptablesNFTMaxRules = 100_000

// iptTool names the programs of one iptables backend.
type iptTool struct {
	cmd, restore string
	backend      string // "nft" or "legacy", for LoadInfo.Method
}

var (
	iptNFT    = iptTool{cmd: "iptables-nft", restore: "iptables-nft-restore", backend: "nft"}
	iptLegacy = iptTool{cmd: "iptables-legacy", restore: "iptables-legacy-restore", backend: "legacy"}
)

func (x iptTool) probe() error { return needPrograms("iptables", x.cmd, x.restore) }

func init() {
	Register("iptables", func() Mechanism { return iptablesMechanism{name: "iptables", tool: iptNFT} })
	Register("iptables-legacy", func() Mechanism { return iptablesMechanism{name: "iptables-legacy", tool: iptLegacy} })
}

// iptablesMechanism filters with one iptables rule per CIDR, loaded by one
// iptables-restore --noflush process (kube-proxy style).
type iptablesMechanism struct {
	name string
	tool iptTool
}

func (m iptablesMechanism) Name() string { return m.name }
func (m iptablesMechanism) Probe() error { return m.tool.probe() }
func (m iptablesMechanism) MaxRules() int {
	if m.tool.backend == "nft" {
		return iptablesNFTMaxRules
	}
	return iptablesMaxRules
}

func (m iptablesMechanism) Load(ctx context.Context, t Target, cidrs []netip.Prefix, o Options) (Filter, LoadInfo, error) {
	f := &iptFilter{t: t, tool: m.tool, bypass: o.EstablishedBypass, counterChain: chainDrop, drop: chainDrop, rules: len(cidrs)}
	if err := f.noteTable(); err != nil {
		return nil, LoadInfo{}, err
	}
	var b lineBuffer
	b.Grow(len(cidrs)*48 + 512)
	b.Write("*filter")
	b.Write(":"+chainEgress, "-", "[0:0]")
	b.Write(":"+chainDrop, "-", "[0:0]")
	f.writeBypass(&b)
	for _, p := range cidrs {
		b.Write("-A", chainEgress, "-d", p.String(), "-j", chainDrop)
	}
	b.Write("-A", chainDrop, "-j", "DROP")
	b.Write(append([]string{"-I"}, f.jump(1)...)...)
	b.Write("COMMIT")
	res, err := runIn(ctx, t, b.Bytes(), m.tool.restore, "--noflush", "-w")
	if err != nil {
		// The restore is one atomic commit: nothing of it was applied, but
		// remove any half-state a crash might have left anyway.
		_ = f.cleanup(context.WithoutCancel(ctx), false)
		return nil, LoadInfo{}, fmt.Errorf("load %d rules with %s: %w", len(cidrs), m.tool.restore, err)
	}
	f.attached = true
	return f, LoadInfo{
		Traversal:     f.traversal(),
		Method:        fmt.Sprintf("%s --noflush (%s backend), one rule per CIDR", m.tool.restore, m.tool.backend),
		Batches:       1,
		LoaderPeakRSS: res.PeakRSS,
	}, nil
}

// iptFilter is an iptables chain CNB-EGRESS jumped to from FORWARD -i Dev.
// The ipset mechanism uses it with a single set-match rule.
type iptFilter struct {
	t            Target
	tool         iptTool
	bypass       bool
	counterChain string // chain whose DROP rule counts Stats.Dropped
	drop         string // target of per-CIDR rules (chainDrop), "" for ipset
	rules        int
	attached     bool
	closed       bool
	// createdTable: the nft backend's "ip filter" table did not exist
	// before Load, so Close deletes it if it is left empty.
	createdTable bool
}

// noteTable records whether Load is about to create iptables-nft's table.
func (f *iptFilter) noteTable() error {
	if f.tool.backend != "nft" {
		return nil
	}
	exists, err := nfFilterTableExists(f.t)
	if err != nil {
		return fmt.Errorf("check for an existing iptables-nft table: %w", err)
	}
	f.createdTable = !exists
	return nil
}

func (f *iptFilter) traversal() string {
	if f.bypass {
		return TraversalNewConnection
	}
	return TraversalEveryPacket
}

// writeBypass writes the leading conntrack rule when bypass is on. It
// RETURNs rather than ACCEPTs: the cost per packet is the same, and a
// RETURN leaves the rest of FORWARD (the datapath's own rules) in force.
func (f *iptFilter) writeBypass(b *lineBuffer) {
	if f.bypass {
		b.Write("-A", chainEgress, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN")
	}
}

// jump is the FORWARD rule spec that sends the pod's packets to chainEgress;
// pos > 0 puts the position after the chain (for -I).
func (f *iptFilter) jump(pos int) []string {
	chain, dir := "FORWARD", "-i"
	if f.t.Local {
		chain, dir = "OUTPUT", "-o"
	}
	s := []string{chain}
	if pos > 0 {
		s = append(s, fmt.Sprint(pos))
	}
	return append(s, dir, f.t.Dev, "-j", chainEgress)
}

func (f *iptFilter) ipt(ctx context.Context, args ...string) (nfResult, error) {
	return runIn(ctx, f.t, nil, f.tool.cmd, append([]string{"-w"}, args...)...)
}

func (f *iptFilter) check() error {
	if f.closed {
		return errors.New("egress filter already closed")
	}
	return nil
}

func (f *iptFilter) Add(ctx context.Context, p netip.Prefix) error {
	if err := f.check(); err != nil {
		return err
	}
	pos := "1"
	if f.bypass {
		pos = "2"
	}
	if _, err := f.ipt(ctx, "-I", chainEgress, pos, "-d", p.String(), "-j", f.drop); err != nil {
		return fmt.Errorf("add deny cidr %s: %w", p, err)
	}
	f.rules++
	return nil
}

func (f *iptFilter) Remove(ctx context.Context, p netip.Prefix) error {
	if err := f.check(); err != nil {
		return err
	}
	if _, err := f.ipt(ctx, "-D", chainEgress, "-d", p.String(), "-j", f.drop); err != nil {
		return fmt.Errorf("remove deny cidr %s: %w", p, err)
	}
	f.rules--
	return nil
}

func (f *iptFilter) Stats(ctx context.Context) (Stats, error) {
	if err := f.check(); err != nil {
		return Stats{}, err
	}
	res, err := f.ipt(ctx, "-L", f.counterChain, "-v", "-x", "-n")
	if err != nil {
		return Stats{}, fmt.Errorf("read drop counter: %w", err)
	}
	n, err := nf.ParseDropCounter(res.Stdout)
	if err != nil {
		return Stats{}, fmt.Errorf("read drop counter of %s: %w", f.counterChain, err)
	}
	return Stats{Dropped: n, Rules: f.rules}, nil
}

func (f *iptFilter) Detach(ctx context.Context) error {
	if err := f.check(); err != nil {
		return err
	}
	if !f.attached {
		return nil
	}
	if _, err := f.ipt(ctx, append([]string{"-D"}, f.jump(0)...)...); err != nil {
		return fmt.Errorf("detach egress filter: %w", err)
	}
	f.attached = false
	return nil
}

func (f *iptFilter) Attach(ctx context.Context) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.attached {
		return nil
	}
	if _, err := f.ipt(ctx, append([]string{"-I"}, f.jump(1)...)...); err != nil {
		return fmt.Errorf("attach egress filter: %w", err)
	}
	f.attached = true
	return nil
}

func (f *iptFilter) Close(ctx context.Context) error {
	if f.closed {
		return nil
	}
	f.closed = true
	return f.cleanup(context.WithoutCancel(ctx), f.attached)
}

// cleanup removes the jump (if attached) and both chains in one restore:
// declaring a chain in a --noflush restore flushes it (or creates it, so the
// -X that follows works whatever state a failed load left).
func (f *iptFilter) cleanup(ctx context.Context, attached bool) error {
	var b lineBuffer
	b.Write("*filter")
	chains := []string{chainEgress}
	if f.drop != "" {
		chains = append(chains, f.drop)
	}
	for _, c := range chains {
		b.Write(":"+c, "-", "[0:0]")
	}
	if attached {
		b.Write(append([]string{"-D"}, f.jump(0)...)...)
	}
	for _, c := range chains {
		b.Write("-X", c)
	}
	b.Write("COMMIT")
	if _, err := runIn(ctx, f.t, b.Bytes(), f.tool.restore, "--noflush", "-w"); err != nil {
		return fmt.Errorf("remove egress chains: %w", err)
	}
	if f.createdTable {
		return nfDeleteFilterTableIfEmpty(f.t)
	}
	return nil
}
