package filter

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Names of what the nftables mechanism creates in the node namespace.
const (
	nftTable   = "cnb_egress"
	nftChain   = "forward"
	nftSet     = "deny"
	nftCounter = "dropped"
)

// nftChunkPrefixes is how many prefixes (two interval elements each) go in
// one SetAddElements message (nftMessagesPerFlush of them per Flush): google/nftables
// v0.3.0 puts all elements of a call in one netlink attribute, whose uint16
// length overflows from about 1638 prefixes on (netbird uses 1500 for the
// same reason; fixed upstream after v0.3.0 by PR #303).
const nftChunkPrefixes = 1500

// nftMessagesPerFlush is how many such messages go in one batch (Flush):
// every nf_tables transaction commit costs time that grows with the set's
// size: one Flush per message took 78 s for 1M prefixes here, 128 per Flush
// 5.8 s (TestNetfilterBigLoad).
// The socket buffers are raised (nftSockBuf) so a batch of this size fits,
// as nft does and google/nftables does itself after v0.3.0 (PR #312).
const nftMessagesPerFlush = 128

// nftSockBuf is the send and receive buffer size forced on the netlink
// socket (SO_SNDBUFFORCE/SO_RCVBUFFORCE, root only).
const nftSockBuf = 16 << 20

// nftBigBuffers raises the netlink socket's buffers past the sysctl limits.
func nftBigBuffers(c *netlink.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = errors.Join(
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, nftSockBuf),
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, nftSockBuf))
	}); err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("raise netlink socket buffers to %d bytes: %w", nftSockBuf, serr)
	}
	return nil
}

// nftMaxRules bounds nftables at 1M: the kernel's rbtree interval set and
// the loader grow with N (the lab measured 763 MB RSS for `nft -f` at 1M),
// and issue 10 asks for 1M.
const nftMaxRules = 1_000_000

func init() { Register("nftables", func() Mechanism { return nftMechanism{} }) }

// nftMechanism filters with an nftables interval set of deny prefixes in a
// forward base chain, programmed over netlink with google/nftables.
type nftMechanism struct{}

func (nftMechanism) Name() string  { return "nftables" }
func (nftMechanism) Probe() error  { return nil }
func (nftMechanism) MaxRules() int { return nftMaxRules }

// nftElements returns the interval pair of p: its first address and,
// flagged IntervalEnd, the address after its last (Generate never returns a
// prefix ending at 255.255.255.255, which would need IntervalOpen).
func nftElements(p netip.Prefix) ([2]nftables.SetElement, error) {
	if !p.Addr().Is4() {
		return [2]nftables.SetElement{}, fmt.Errorf("deny cidr %s is not IPv4", p)
	}
	first, next := prefixRange(p)
	if next == 0 {
		return [2]nftables.SetElement{}, fmt.Errorf("deny cidr %s ends at 255.255.255.255 (needs an open interval, not in google/nftables v0.3.0)", p)
	}
	return [2]nftables.SetElement{
		{Key: binary.BigEndian.AppendUint32(nil, first)},
		{Key: binary.BigEndian.AppendUint32(nil, next), IntervalEnd: true},
	}, nil
}

func (nftMechanism) Load(ctx context.Context, t Target, cidrs []netip.Prefix, o Options) (Filter, LoadInfo, error) {
	if t.Dev == "" || len(t.Dev) >= unix.IFNAMSIZ {
		return nil, LoadInfo{}, fmt.Errorf("load nftables filter: interface name %q is empty or longer than %d bytes", t.Dev, unix.IFNAMSIZ-1)
	}
	conn, err := nftables.New(append(nftNS(t), nftables.AsLasting(), nftables.WithSockOptions(nftBigBuffers))...)
	if err != nil {
		return nil, LoadInfo{}, fmt.Errorf("open nftables netlink socket: %w", err)
	}
	f := &nftFilter{conn: conn, dev: t.Dev, local: t.Local, bypass: o.EstablishedBypass, rules: len(cidrs)}
	hook := nftables.ChainHookForward
	if t.Local {
		hook = nftables.ChainHookOutput
	}
	f.table = &nftables.Table{Name: nftTable, Family: nftables.TableFamilyIPv4}
	f.chain = &nftables.Chain{
		Name:     nftChain,
		Table:    f.table,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  hook,
		Priority: nftables.ChainPriorityRef(*nftables.ChainPriorityFilter - 1),
	}
	f.set = &nftables.Set{Name: nftSet, Table: f.table, Interval: true, KeyType: nftables.TypeIPAddr}
	fail := func(err error) (Filter, LoadInfo, error) {
		_ = f.Close(context.WithoutCancel(ctx))
		return nil, LoadInfo{}, fmt.Errorf("load %d cidrs into nftables set %s: %w", len(cidrs), nftSet, err)
	}

	conn.AddTable(f.table)
	conn.AddChain(f.chain)
	conn.AddObj(&nftables.CounterObj{Table: f.table, Name: nftCounter})
	if err := conn.AddSet(f.set, nil); err != nil {
		return fail(err)
	}
	if f.bypass {
		conn.AddRule(&nftables.Rule{Table: f.table, Chain: f.chain, Exprs: bypassExprs()})
	}
	if err := conn.Flush(); err != nil {
		return fail(fmt.Errorf("create table %s: %w", nftTable, err))
	}
	batches := 1
	// A fresh slice per message: the library keeps only the marshalled
	// bytes, so the garbage is bounded by one batch.
	const perFlush = nftChunkPrefixes * nftMessagesPerFlush
	for start := 0; start < len(cidrs); start += perFlush {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		end := min(start+perFlush, len(cidrs))
		for c := start; c < end; c += nftChunkPrefixes {
			elems := make([]nftables.SetElement, 0, 2*nftChunkPrefixes)
			for _, p := range cidrs[c:min(c+nftChunkPrefixes, end)] {
				pair, err := nftElements(p)
				if err != nil {
					return fail(err)
				}
				elems = append(elems, pair[:]...)
			}
			if err := conn.SetAddElements(f.set, elems); err != nil {
				return fail(err)
			}
		}
		if err := conn.Flush(); err != nil {
			return fail(fmt.Errorf("add prefixes %d..%d: %w", start, end-1, err))
		}
		batches++
	}
	// The drop rule goes last: enforcement starts with the whole set loaded.
	if err := f.addDropRule(); err != nil {
		return fail(err)
	}
	batches++
	return f, LoadInfo{
		Traversal: map[bool]string{false: TraversalEveryPacket, true: TraversalNewConnection}[f.bypass],
		Method: fmt.Sprintf("google/nftables interval set, %d prefixes per message, %d messages per flush",
			nftChunkPrefixes, nftMessagesPerFlush),
		Batches: batches,
	}, nil
}

// bypassExprs is `ct state established,related accept`.
func bypassExprs() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{
			SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
}

// nftFilter is the table cnb_egress. Its drop rule counts into the named
// counter "dropped", so Stats.Dropped survives Detach/Attach.
type nftFilter struct {
	conn   *nftables.Conn
	table  *nftables.Table
	chain  *nftables.Chain
	set    *nftables.Set
	dev    string
	local  bool // the namespace's own egress (output hook, oifname)
	bypass bool
	rules  int
	// dropRule is the handle of `iifname dev ip daddr @deny counter name
	// dropped drop`, 0 while detached.
	dropRule uint64
	closed   bool
}

// dropExprs is `iifname dev ip daddr @deny counter name dropped drop`
// (oifname for a local target).
func (f *nftFilter) dropExprs() []expr.Any {
	ifname := make([]byte, unix.IFNAMSIZ)
	copy(ifname, f.dev)
	key := expr.MetaKeyIIFNAME
	if f.local {
		key = expr.MetaKeyOIFNAME
	}
	return []expr.Any{
		&expr.Meta{Key: key, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: 1, SetName: f.set.Name, SetID: f.set.ID},
		&expr.Objref{Type: int(nftables.ObjTypeCounter), Name: nftCounter},
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
}

// addDropRule appends the drop rule and records its handle.
func (f *nftFilter) addDropRule() error {
	f.conn.AddRule(&nftables.Rule{Table: f.table, Chain: f.chain, Exprs: f.dropExprs()})
	if err := f.conn.Flush(); err != nil {
		return fmt.Errorf("add drop rule: %w", err)
	}
	rules, err := f.conn.GetRules(f.table, f.chain)
	if err != nil {
		return fmt.Errorf("list rules of %s: %w", nftChain, err)
	}
	for _, r := range rules {
		for _, e := range r.Exprs {
			if l, ok := e.(*expr.Lookup); ok && l.SetName == f.set.Name {
				f.dropRule = r.Handle
			}
		}
	}
	if f.dropRule == 0 {
		return errors.New("drop rule not found after adding it")
	}
	return nil
}

func (f *nftFilter) check() error {
	if f.closed {
		return errors.New("egress filter already closed")
	}
	return nil
}

func (f *nftFilter) Add(_ context.Context, p netip.Prefix) error {
	return f.change(p, true)
}

func (f *nftFilter) Remove(_ context.Context, p netip.Prefix) error {
	return f.change(p, false)
}

func (f *nftFilter) change(p netip.Prefix, add bool) error {
	if err := f.check(); err != nil {
		return err
	}
	pair, err := nftElements(p)
	if err != nil {
		return err
	}
	verb := "add"
	if add {
		err = f.conn.SetAddElements(f.set, pair[:])
	} else {
		verb = "remove"
		err = f.conn.SetDeleteElements(f.set, pair[:])
	}
	if err == nil {
		err = f.conn.Flush()
	}
	if err != nil {
		return fmt.Errorf("%s deny cidr %s: %w", verb, p, err)
	}
	if add {
		f.rules++
	} else {
		f.rules--
	}
	return nil
}

func (f *nftFilter) Stats(context.Context) (Stats, error) {
	if err := f.check(); err != nil {
		return Stats{}, err
	}
	objs, err := f.conn.GetObjects(f.table)
	if err != nil {
		return Stats{}, fmt.Errorf("read nftables counter %s: %w", nftCounter, err)
	}
	for _, o := range objs {
		if c, ok := o.(*nftables.CounterObj); ok && c.Name == nftCounter {
			return Stats{Dropped: c.Packets, Rules: f.rules}, nil
		}
	}
	return Stats{}, fmt.Errorf("nftables counter %s not found in table %s", nftCounter, nftTable)
}

func (f *nftFilter) Detach(context.Context) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.dropRule == 0 {
		return nil
	}
	if err := f.conn.DelRule(&nftables.Rule{Table: f.table, Chain: f.chain, Handle: f.dropRule}); err != nil {
		return fmt.Errorf("detach: %w", err)
	}
	if err := f.conn.Flush(); err != nil {
		return fmt.Errorf("detach: delete drop rule: %w", err)
	}
	f.dropRule = 0
	return nil
}

func (f *nftFilter) Attach(context.Context) error {
	if err := f.check(); err != nil {
		return err
	}
	if f.dropRule != 0 {
		return nil
	}
	if err := f.addDropRule(); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	return nil
}

// Close deletes the table (chain, set, counter and rules with it).
func (f *nftFilter) Close(context.Context) error {
	if f.closed {
		return nil
	}
	f.closed = true
	var err error
	if tables, lerr := f.conn.ListTablesOfFamily(nftables.TableFamilyIPv4); lerr != nil {
		err = fmt.Errorf("list nftables tables: %w", lerr)
	} else {
		for _, t := range tables {
			if t.Name == nftTable {
				f.conn.DelTable(f.table)
				if ferr := f.conn.Flush(); ferr != nil {
					err = fmt.Errorf("delete nftables table %s: %w", nftTable, ferr)
				}
			}
		}
	}
	return errors.Join(err, f.conn.CloseLasting())
}
