//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The build constraint matches the generated hostrouting_bpfel.go (only the
// little-endian object is committed); hostrouting_other.go covers the rest.

package hostrouting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"github.com/cnibench/cnibench/internal/nsrun"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
)

// Values of the BPF `ifaces` map; keep in sync with enum iface_kind in
// hostrouting.c.
const (
	ifacePod  uint32 = 1
	ifaceWire uint32 = 2
)

// Indexes of the BPF `counters` map; keep in sync with enum counter_idx in
// hostrouting.c.
const (
	cntRedirectPeer = iota
	cntRedirectNeigh
	cntPassNotIPv4
	cntPassFIB
	cntPassTTL
	cntPassEgress
	cntDrop
	cntCTNew
	cntCTEstablished
	cntCTReply
	cntPolicyDenied
	cntRedirectHost
	cntMax
)

// Values of the BPF `policy` map; keep in sync with enum policy_verdict in
// hostrouting.c.
const (
	policyAllow uint32 = 1
	policyDeny  uint32 = 2
)

// Attach modes reported by (*Program).AttachMode.
const (
	ModeTCX    = "tcx"
	ModeLegacy = "tc-clsact"
)

// legacyFilterPriority and legacyFilterHandle identify our cls_bpf filter
// on clsact ingress when TCX is unavailable (so that Close removes exactly
// that filter and nothing another tool installed).
const (
	legacyFilterPriority = 0xcb
	legacyFilterName     = "cnb-hostrouting"
)

var legacyFilterHandle = netlink.MakeHandle(0, 1)

// Program is the host-routing program loaded for one node namespace.
// It is safe for concurrent use.
type Program struct {
	mu   sync.Mutex
	objs *hostroutingObjects
	bare bool
	// redirectHost: local pods are reached with bpf_redirect to their
	// host-side veth's egress instead of bpf_redirect_peer.
	redirectHost bool
	legacy       bool // use clsact + cls_bpf instead of TCX
	attached     []attachment
	byIndex      map[int]bool
}

type attachment interface {
	ifindex() int
	detach() error
}

// Probe reports whether this machine can run BPF host routing: the
// required program type and helpers, loading the objects, and attaching at
// tc ingress (TCX, else clsact) on the loopback device of a scratch network
// namespace. It returns nil or an error wrapping ErrNotSupported that says
// why.
func Probe() error {
	if err := features.HaveProgramType(ebpf.SchedCLS); err != nil {
		return fmt.Errorf("%w: tc (sched_cls) BPF programs: %w", ErrNotSupported, err)
	}
	for _, h := range []asm.BuiltinFunc{asm.FnFibLookup, asm.FnRedirectNeigh, asm.FnRedirectPeer, asm.FnRedirect} {
		if err := features.HaveProgramHelper(ebpf.SchedCLS, h); err != nil {
			return fmt.Errorf("%w: BPF helper %s: %w", ErrNotSupported, h, err)
		}
	}

	p, err := Load(Options{})
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	defer p.Close()

	err = inScratchNetNS(func() error {
		const lo = 1 // the loopback device is always ifindex 1 in a new netns
		a, err := p.attachIngress(lo)
		if err != nil {
			return err
		}
		return a.detach()
	})
	if err != nil {
		if errors.Is(err, ErrNotSupported) {
			return err
		}
		return fmt.Errorf("%w: attach at tc ingress: %w", ErrNotSupported, err)
	}
	return nil
}

// Load loads the BPF objects into the kernel. Use one Program per node
// namespace; attach it with AttachFromPod/AttachFromWire and release it with
// Close.
func Load(opts Options) (*Program, error) {
	// A no-op on kernels that account BPF memory to the cgroup (5.11+).
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: remove memlock rlimit: %w", ErrNotSupported, err)
	}
	spec, err := loadHostrouting()
	if err != nil {
		return nil, fmt.Errorf("parse hostrouting BPF objects: %w", err)
	}
	for name, on := range map[string]bool{hostroutingVarBare: opts.Bare, hostroutingVarRedirectHost: opts.RedirectHost} {
		v, ok := spec.Variables[name]
		if !ok {
			return nil, fmt.Errorf("hostrouting BPF objects have no %q variable", name)
		}
		val := uint32(0)
		if on {
			val = 1
		}
		if err := v.Set(val); err != nil {
			return nil, fmt.Errorf("set hostrouting variable %s: %w", name, err)
		}
	}
	var objs hostroutingObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w: load hostrouting BPF objects (needs root or CAP_BPF+CAP_NET_ADMIN): %w", ErrNotSupported, err)
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			return nil, fmt.Errorf("%w: load hostrouting BPF objects: %w", ErrNotSupported, err)
		}
		return nil, fmt.Errorf("load hostrouting BPF objects: %w", err)
	}
	return &Program{objs: &objs, bare: opts.Bare, redirectHost: opts.RedirectHost, byIndex: map[int]bool{}}, nil
}

// Bare reports whether the program was loaded without connection tracking
// and policy.
func (p *Program) Bare() bool { return p.bare }

// RedirectHost reports whether local pods are reached with bpf_redirect to
// the egress of their host-side veth (Options.RedirectHost) rather than with
// bpf_redirect_peer.
func (p *Program) RedirectHost() bool { return p.redirectHost }

// SetPolicy sets the verdict for packets from src: allowed or denied. A
// source no prefix covers is allowed. Only the full model (not Bare) looks
// the policy up.
func (p *Program) SetPolicy(src netip.Prefix, allow bool) error {
	if !src.Addr().Is4() {
		return fmt.Errorf("hostrouting policy %s: only IPv4 prefixes", src)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return errors.New("set hostrouting policy: program is closed")
	}
	key := hostroutingPolicyKey{Prefixlen: uint32(src.Bits()), Addr: binary.NativeEndian.Uint32(src.Masked().Addr().AsSlice())}
	verdict := policyDeny
	if allow {
		verdict = policyAllow
	}
	if err := p.objs.Policy.Update(key, verdict, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("set hostrouting policy %s: %w", src, err)
	}
	return nil
}

// CTEntries counts the entries of the connection-tracking map (it walks
// the map: meant for tests and occasional checks, not per packet).
func (p *Program) CTEntries() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return 0, errors.New("count hostrouting CT entries: program is closed")
	}
	var (
		key hostroutingCtKey
		val hostroutingCtEntry
		n   int
	)
	it := p.objs.Ct.Iterate()
	for it.Next(&key, &val) {
		n++
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("walk hostrouting CT map: %w", err)
	}
	return n, nil
}

// AttachFromPod attaches the program at tc ingress of a host-side pod veth
// and registers it as a pod device, so that traffic routed to it from the
// other hooks is redirected into the pod with bpf_redirect_peer (or, with
// Options.RedirectHost, to the egress of this veth with bpf_redirect). The caller
// must be running in the node's network namespace (on a locked OS thread).
func (p *Program) AttachFromPod(ifindex int) error {
	return p.attach(ifindex, ifacePod, "pod veth")
}

// AttachFromWire attaches the program at tc ingress of the node's uplink
// veth and registers it as the uplink, so that traffic routed to it is
// transmitted with bpf_redirect_neigh. The caller must be running in the
// node's network namespace (on a locked OS thread).
func (p *Program) AttachFromWire(ifindex int) error {
	return p.attach(ifindex, ifaceWire, "uplink")
}

func (p *Program) attach(ifindex int, kind uint32, what string) error {
	if ifindex <= 0 {
		return fmt.Errorf("attach hostrouting to %s: invalid ifindex %d", what, ifindex)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return fmt.Errorf("attach hostrouting to %s ifindex %d: program is closed", what, ifindex)
	}
	if p.byIndex[ifindex] {
		return fmt.Errorf("attach hostrouting to %s ifindex %d: already attached", what, ifindex)
	}

	key := uint32(ifindex)
	if err := p.objs.Ifaces.Update(key, kind, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("register %s ifindex %d: %w", what, ifindex, err)
	}
	a, err := p.attachIngress(ifindex)
	if err != nil {
		_ = p.objs.Ifaces.Delete(key)
		return fmt.Errorf("attach hostrouting to %s: %w", what, err)
	}
	p.attached = append(p.attached, a)
	p.byIndex[ifindex] = true
	return nil
}

// attachIngress attaches the program at tc ingress of ifindex in the
// calling thread's network namespace: TCX if the kernel has it, else a
// clsact qdisc with a direct-action cls_bpf filter. The first attempt that
// finds TCX unsupported switches the Program to the legacy mode for good.
func (p *Program) attachIngress(ifindex int) (attachment, error) {
	if !p.legacy {
		l, err := link.AttachTCX(link.TCXOptions{
			Interface: ifindex,
			Program:   p.objs.HostRouting,
			Attach:    ebpf.AttachTCXIngress,
		})
		if err == nil {
			return &tcxAttachment{link: l, index: ifindex}, nil
		}
		if !errors.Is(err, link.ErrNotSupported) {
			return nil, fmt.Errorf("attach tcx to ifindex %d: %w", ifindex, err)
		}
		p.legacy = true
	}
	return attachLegacy(ifindex, p.objs.HostRouting)
}

// AttachMode reports how the program is (or will be) attached: ModeTCX or
// ModeLegacy.
func (p *Program) AttachMode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.legacy {
		return ModeLegacy
	}
	return ModeTCX
}

// Counters returns the per-action packet counters summed over all CPUs.
func (p *Program) Counters() (Counters, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return Counters{}, errors.New("read hostrouting counters: program is closed")
	}
	var raw [cntMax]uint64
	for i := range raw {
		var perCPU []uint64
		if err := p.objs.Counters.Lookup(uint32(i), &perCPU); err != nil {
			return Counters{}, fmt.Errorf("read hostrouting counter %d: %w", i, err)
		}
		for _, v := range perCPU {
			raw[i] += v
		}
	}
	c := Counters{
		RedirectPeer:  raw[cntRedirectPeer],
		RedirectHost:  raw[cntRedirectHost],
		RedirectNeigh: raw[cntRedirectNeigh],
		PassNotIPv4:   raw[cntPassNotIPv4],
		PassFIB:       raw[cntPassFIB],
		PassTTL:       raw[cntPassTTL],
		PassEgress:    raw[cntPassEgress],
		Drop:          raw[cntDrop],
		CTNew:         raw[cntCTNew],
		CTEstablished: raw[cntCTEstablished],
		CTReply:       raw[cntCTReply],
		PolicyDenied:  raw[cntPolicyDenied],
	}
	c.Pass = c.PassNotIPv4 + c.PassFIB + c.PassTTL + c.PassEgress
	return c, nil
}

// Close detaches the program from every device (in reverse attach order)
// and frees the BPF objects. It may be called from any namespace and more
// than once.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return nil
	}
	var errs []error
	for i := len(p.attached) - 1; i >= 0; i-- {
		a := p.attached[i]
		if err := a.detach(); err != nil {
			errs = append(errs, fmt.Errorf("detach hostrouting from ifindex %d: %w", a.ifindex(), err))
		}
	}
	p.attached = nil
	p.byIndex = map[int]bool{}
	if err := p.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close hostrouting BPF objects: %w", err))
	}
	p.objs = nil
	return errors.Join(errs...)
}

// tcxAttachment is a TCX link. Closing its fd detaches it, whatever
// namespace the closing thread is in.
type tcxAttachment struct {
	link  link.Link
	index int
}

func (a *tcxAttachment) ifindex() int  { return a.index }
func (a *tcxAttachment) detach() error { return bpflink.Close(a.link) }

// legacyAttachment is a cls_bpf filter on clsact ingress. Removing it needs
// netlink in the device's namespace, so the namespace is kept open.
type legacyAttachment struct {
	ns           netns.NsHandle
	index        int
	filter       *netlink.BpfFilter
	qdisc        *netlink.GenericQdisc
	createdQdisc bool
}

func attachLegacy(ifindex int, prog *ebpf.Program) (_ *legacyAttachment, err error) {
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("attach tc filter to ifindex %d: get current netns: %w", ifindex, err)
	}
	defer func() {
		if err != nil {
			_ = ns.Close()
		}
	}()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("attach tc filter to ifindex %d: netlink handle: %w", ifindex, err)
	}
	defer h.Close()

	a := &legacyAttachment{
		ns:    ns,
		index: ifindex,
		qdisc: &netlink.GenericQdisc{
			QdiscAttrs: netlink.QdiscAttrs{
				LinkIndex: ifindex,
				Handle:    netlink.MakeHandle(0xffff, 0),
				Parent:    netlink.HANDLE_CLSACT,
			},
			QdiscType: "clsact",
		},
		filter: &netlink.BpfFilter{
			FilterAttrs: netlink.FilterAttrs{
				LinkIndex: ifindex,
				Parent:    netlink.HANDLE_MIN_INGRESS,
				Handle:    legacyFilterHandle,
				Protocol:  unix.ETH_P_ALL,
				Priority:  legacyFilterPriority,
			},
			Fd:           prog.FD(),
			Name:         legacyFilterName,
			DirectAction: true,
		},
	}
	switch err := h.QdiscAdd(a.qdisc); {
	case err == nil:
		a.createdQdisc = true
	case errors.Is(err, unix.EEXIST):
		// A clsact qdisc is already there (another tool's); share it.
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
		return nil, fmt.Errorf("%w: add clsact qdisc to ifindex %d: %w", ErrNotSupported, ifindex, err)
	default:
		return nil, fmt.Errorf("add clsact qdisc to ifindex %d: %w", ifindex, err)
	}
	if err := h.FilterAdd(a.filter); err != nil {
		if a.createdQdisc {
			_ = h.QdiscDel(a.qdisc)
		}
		return nil, fmt.Errorf("add cls_bpf filter to ifindex %d: %w", ifindex, err)
	}
	return a, nil
}

func (a *legacyAttachment) ifindex() int { return a.index }

func (a *legacyAttachment) detach() error {
	defer a.ns.Close()
	h, err := netlink.NewHandleAt(a.ns)
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	var errs []error
	if err := h.FilterDel(a.filter); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
		errs = append(errs, fmt.Errorf("delete cls_bpf filter: %w", err))
	}
	if a.createdQdisc {
		if err := h.QdiscDel(a.qdisc); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("delete clsact qdisc: %w", err))
		}
	}
	return errors.Join(errs...)
}

// inScratchNetNS runs fn inside a new, unnamed network namespace, which
// disappears when fn returns. fn runs on its own goroutine with a locked OS
// thread, so the caller's thread never changes namespace; if the thread
// cannot be switched back it stays locked and is discarded by the runtime
// when the goroutine exits.
func inScratchNetNS(fn func() error) error {
	var ferr error
	if err := nsrun.Scratch(func() error { ferr = fn(); return nil }); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return ferr
}
