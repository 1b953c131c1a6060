package proof

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"
)

// Probe describes how MeasureEnforcement and MeasureRelease prove a filter:
// UDP probes from the client pod to a denied and an allowed address of the
// server pod. Zero tunables take the defaults below.
type Probe struct {
	// ClientDo and ServerDo run f inside the client pod's and the server
	// pod's namespace (lab.NS.Do): the sender's and the receiver's sockets
	// are created there.
	ClientDo func(f func() error) error
	ServerDo func(f func() error) error
	// Denied is the server's address inside a denied CIDR (see
	// lab.Topology.AddServerAddress); Allowed is an address of the server
	// that no filter denies (its ordinary address).
	Denied, Allowed netip.Addr
	// Port is the UDP port of the receiver; 0 picks a free one.
	Port uint16

	// Settle is how long after the action returned, and after the last
	// probe that got through, nothing may arrive at Denied (and the
	// receiver must have caught up) before a deny counts as proven;
	// default 20 ms.
	Settle time.Duration
	// MinUnanswered is how many probes in a row must be lost; default 1000.
	MinUnanswered int
	// AllowedInterval is how often a probe goes to Allowed; default 1 ms.
	AllowedInterval time.Duration
	// Interval is the least gap between two probes to Denied (the sender
	// busy-waits on its own CPU); 0 sends them back to back. A gap bounds
	// the resolution but also the work the probes add to the loader's
	// machine: back to back, a few hundred thousand probes a second arrive
	// while a deny is loading, and their receiver shares a CPU with the
	// loader.
	Interval time.Duration
	// Warmup bounds the wait for the path's state before the action (probes
	// arriving, or for a release not arriving); default 2 s.
	Warmup time.Duration
	// MaxDuration bounds the measurement from the action's start (the
	// action's context has that deadline too; a 10M-rule load may take
	// a minute); default 2 min.
	MaxDuration time.Duration
	// Ring is the number of send times kept (power of two); default 1<<20.
	// It must hold the probes sent from the last arrival to the end (Settle
	// plus the receiver's lag, at most 50 ms; ~5 µs each): 1<<20 is >= 5 s.
	Ring int
	// NoPin keeps the sender, receiver and action threads unpinned. By
	// default, with two CPUs or more, the sender's thread has the first
	// allowed CPU to itself and the receiver's and the action's threads
	// the others, so that the action never preempts the sender: a stalled
	// sender would leave a gap in the probes exactly when the action
	// commits, the moment the proof has to resolve.
	NoPin bool
}

// Enforcement is what MeasureEnforcement measured. Durations are since
// Start, on the monotonic clock.
type Enforcement struct {
	// Start is when the action was called; Returned when it returned.
	Start    time.Time
	Returned time.Duration
	// Enforced is the send time of the first probe to Denied after the
	// last one that arrived: the filter took effect between the previous
	// probe's send and this one's. It can be slightly negative when an
	// action takes effect at once on probes still in flight.
	Enforced time.Duration
	// Resolution is the gap between that probe's send and the previous
	// one's: how finely this proof locates the moment of enforcement.
	Resolution time.Duration
	// ProbeInterval is the mean interval between probes to Denied.
	ProbeInterval time.Duration
	// Throttled is the time the sender waited for a receiver more than
	// 50 ms behind (back-pressure instead of losses); it shows as gaps.
	Throttled time.Duration
	// ProbesSent and ProbesArrived count the probes to Denied; Lost counts
	// the probes up to the last one that arrived that did not (receive
	// buffer overflows: they blur the proof; should be 0).
	ProbesSent, ProbesArrived, Lost int64
	// AllowedSent and AllowedArrived count the probes to Allowed; AllowedOK
	// says they arrived throughout and after (at most 1% lost, the last
	// one arrived).
	AllowedSent, AllowedArrived int64
	AllowedOK                   bool
	// Proven: Denied received nothing for Settle and MinUnanswered probes
	// after the action returned, and AllowedOK.
	Proven bool
}

// Release is what MeasureRelease measured (the reverse: a deny removed).
type Release struct {
	Start    time.Time
	Returned time.Duration
	// Released is the send time of the first probe to Denied that arrived.
	Released time.Duration
	// Resolution is the gap between that probe's send and the previous one's.
	Resolution    time.Duration
	ProbeInterval time.Duration
	Throttled     time.Duration
	// ProbesSent and ProbesArrived count the probes to Denied.
	ProbesSent, ProbesArrived   int64
	AllowedSent, AllowedArrived int64
	AllowedOK                   bool
	// Proven: nothing arrived at Denied before the action, probes arrived
	// after it, and AllowedOK.
	Proven bool
}

// ErrNotEnforced is wrapped by MeasureEnforcement's error when probes to
// the denied address still arrived at the end, and by MeasureRelease's when
// none arrived.
var ErrNotEnforced = errors.New("filter did not enforce")

// ErrNotReleased is wrapped by MeasureRelease's error when no probe to the
// address arrived after the action.
var ErrNotReleased = errors.New("deny was not released")

func (p Probe) withDefaults() (Probe, error) {
	if p.ClientDo == nil || p.ServerDo == nil {
		return p, errors.New("probe: ClientDo and ServerDo are required")
	}
	if !p.Denied.Is4() || !p.Allowed.Is4() || p.Denied == p.Allowed {
		return p, fmt.Errorf("probe: need two different IPv4 addresses, got denied %v, allowed %v", p.Denied, p.Allowed)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.Settle, 20*time.Millisecond)
	def(&p.AllowedInterval, time.Millisecond)
	def(&p.Warmup, 2*time.Second)
	def(&p.MaxDuration, 2*time.Minute)
	if p.MinUnanswered <= 0 {
		p.MinUnanswered = 1000
	}
	if p.Ring <= 0 {
		p.Ring = 1 << 20
	}
	if p.Ring&(p.Ring-1) != 0 || p.Ring <= p.MinUnanswered {
		return p, fmt.Errorf("probe: ring size %d must be a power of two above MinUnanswered %d", p.Ring, p.MinUnanswered)
	}
	return p, nil
}

// MeasureEnforcement proves that action makes a filter drop probes to
// p.Denied while p.Allowed still receives them, and measures when. A sender
// in the client pod sends probes to Denied back to back (a busy loop; each
// probe's send time on the monotonic clock goes into a ring) and one to
// Allowed every AllowedInterval; a receiver in the server pod records the
// highest sequence number that arrived per destination address
// (IP_PKTINFO). Once probes arrive, action is called; probing goes on until
// Denied has received nothing for Settle after the action returned and for
// at least MinUnanswered probes, and the receiver has caught up (a later
// probe to Allowed arrived). If probes to Denied still arrive at the end
// (MaxDuration or ctx), the result has Proven false and the error wraps
// ErrNotEnforced. action must honour its context. Measurements take a CPU
// for the sender and raise GOMAXPROCS while they run: do not run two at
// once.
func MeasureEnforcement(ctx context.Context, p Probe, action func(context.Context) error) (Enforcement, error) {
	var e Enforcement
	r, err := runProof(ctx, p, proofEnforce, action)
	if r == nil {
		return e, err
	}
	e = Enforcement{
		Start: r.start, Returned: r.returned, ProbeInterval: r.interval, Throttled: r.throttled,
		ProbesSent: r.sent, ProbesArrived: r.rx.arrived[probeToDenied],
		AllowedSent: r.allowedSent, AllowedArrived: r.rx.arrived[probeToAllowed], AllowedOK: r.allowedOK(),
	}
	if err != nil {
		return e, err
	}
	last := r.rx.max[probeToDenied]
	first := last + 1
	e.Lost = first - e.ProbesArrived
	if r.reason != proofStopSettled {
		if last >= 0 && r.has(last) {
			return e, fmt.Errorf("%w: probes to %s still arrived after the action returned at %v: the last one that did was sent at %v; stopped at %v (%s)",
				ErrNotEnforced, p.Denied, r.returned, r.at(last), r.elapsed, r.reason)
		}
		return e, fmt.Errorf("%w: not proven (%s)", ErrNotEnforced, r.reason)
	}
	if !r.has(first) || (first > 0 && !r.has(first-1)) {
		return e, fmt.Errorf("%w: the probe after the last arrival fell out of the %d-entry ring", ErrNotEnforced, len(r.ring))
	}
	e.Enforced = r.at(first)
	if first > 0 {
		e.Resolution = r.at(first) - r.at(first-1)
	}
	if !e.AllowedOK {
		return e, fmt.Errorf("%w: probes to the allowed address %s were lost too (%d of %d arrived): not a filter of the denied address",
			ErrNotEnforced, p.Allowed, e.AllowedArrived, e.AllowedSent)
	}
	e.Proven = true
	return e, nil
}

// MeasureRelease is the reverse of MeasureEnforcement for removing a deny:
// probes to p.Denied must not arrive before action (for at least Settle and
// MinUnanswered probes), and the result is when they start arriving after
// it. The error wraps ErrNotReleased if none arrived.
func MeasureRelease(ctx context.Context, p Probe, action func(context.Context) error) (Release, error) {
	var rel Release
	r, err := runProof(ctx, p, proofRelease, action)
	if r == nil {
		return rel, err
	}
	rel = Release{
		Start: r.start, Returned: r.returned, ProbeInterval: r.interval, Throttled: r.throttled,
		ProbesSent: r.sent, ProbesArrived: r.rx.arrived[probeToDenied],
		AllowedSent: r.allowedSent, AllowedArrived: r.rx.arrived[probeToAllowed], AllowedOK: r.allowedOK(),
	}
	if err != nil {
		return rel, err
	}
	first := r.rx.min[probeToDenied]
	if r.reason != proofStopSettled || first < 0 {
		return rel, fmt.Errorf("%w: no probe to %s arrived within %v after the action returned (%s)",
			ErrNotReleased, p.Denied, r.elapsed-r.returned, r.reason)
	}
	if !r.has(first) || (first > 0 && !r.has(first-1)) {
		return rel, fmt.Errorf("%w: the first arrival fell out of the %d-entry ring", ErrNotReleased, len(r.ring))
	}
	rel.Released = r.at(first)
	if first > 0 {
		rel.Resolution = r.at(first) - r.at(first-1)
	}
	if !rel.AllowedOK {
		return rel, fmt.Errorf("%w: probes to the allowed address %s were lost (%d of %d arrived)",
			ErrNotReleased, p.Allowed, rel.AllowedArrived, rel.AllowedSent)
	}
	rel.Proven = true
	return rel, nil
}

// proofResult is what one measurement gathered.
type proofResult struct {
	base        time.Time
	start       time.Time
	startNs     int64
	returned    time.Duration
	elapsed     time.Duration // from Start to the end of sending
	reason      string
	sent        int64 // probes to Denied
	throttled   time.Duration
	allowedSent int64
	interval    time.Duration
	ring        []int64 // send time of Denied probe seq at seq&mask, ns since base
	mask        int64
	rx          probeRxStats
}

func (r *proofResult) has(seq int64) bool {
	return seq >= 0 && seq < r.sent && r.sent-seq <= int64(len(r.ring))
}

// at is the send time of probe seq since Start.
func (r *proofResult) at(seq int64) time.Duration {
	return time.Duration(r.ring[seq&r.mask] - r.startNs)
}

func (r *proofResult) allowedOK() bool {
	lost := r.allowedSent - r.rx.arrived[probeToAllowed]
	return r.allowedSent > 0 && r.rx.max[probeToAllowed] == r.allowedSent-1 && lost*100 <= r.allowedSent
}

const (
	proofEnforce = iota
	proofRelease
)

// Why sending stopped.
const (
	proofStopSettled = "settled"
	proofStopMax     = "maximum duration reached"
	proofStopCtx     = "cancelled"
	proofStopAction  = "action failed"
)

// runProof drives one measurement: receiver, sender, action, drain.
func runProof(ctx context.Context, p Probe, mode int, action func(context.Context) error) (*proofResult, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	// The sender and the receiver each keep a P busy (a goroutine coming
	// back from a system call needs one): two more Ps than before, so that
	// the action and the rest of the program are not starved of them and
	// the receiver never waits for one (it would fall behind and throttle
	// the sender). Measurements are therefore not meant to run
	// concurrently.
	procs := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(procs + 2)
	defer runtime.GOMAXPROCS(procs)
	pin := newProbePinning(p)
	rcv, err := newProbeReceiver(p, pin)
	if err != nil {
		return nil, err
	}
	defer rcv.close()
	snd, err := newProbeSender(p, rcv.port)
	if err != nil {
		return nil, err
	}
	defer snd.close()

	res := &proofResult{ring: make([]int64, p.Ring), mask: int64(p.Ring - 1)}
	// Collect now: a collection during the measurement stops the sender
	// too (for milliseconds on a busy machine); the ring just allocated
	// would otherwise trigger one.
	runtime.GC()
	res.base = time.Now()
	sctx, cancel := context.WithTimeout(ctx, p.Warmup+p.MaxDuration)
	defer cancel()
	ready := make(chan struct{})
	var wg sync.WaitGroup
	var sendErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		pin.sender()
		sendErr = snd.loop(ctx, mode, res, rcv, ready)
	}()
	finish := func() {
		wg.Wait()
		res.elapsed = time.Duration(snd.endNs - res.startNs)
		rcv.drain(snd.lastAllowed(), time.Second)
		res.sent, res.allowedSent, res.reason = snd.sent, snd.allowedSent, snd.reason
		res.throttled = time.Duration(snd.throttled)
		res.rx = rcv.stats()
		if res.sent > 1 {
			res.interval = time.Duration((res.ring[(res.sent-1)&res.mask] - snd.firstNs) / (res.sent - 1))
		}
	}
	// The action's goroutine starts (and is pinned) before the action, so
	// that Start is taken on its own thread right before the call.
	type actResult struct {
		startNs, retNs int64
		err            error
	}
	goAct := make(chan bool)
	actDone := make(chan actResult, 1)
	go func() {
		pin.others()
		if !<-goAct {
			return
		}
		start := int64(time.Since(res.base))
		snd.startNs.Store(start)
		actx, acancel := context.WithTimeout(sctx, p.MaxDuration)
		err := action(actx)
		acancel()
		ret := int64(time.Since(res.base))
		if err != nil {
			snd.abort.Store(true)
		}
		snd.returnedNs.Store(ret)
		actDone <- actResult{start, ret, err}
	}()
	select {
	case <-ready:
	case <-snd.done:
		close(goAct)
		finish()
		if sendErr == nil {
			sendErr = fmt.Errorf("probe %s: %s before the action", p.Denied, res.reason)
		}
		return nil, sendErr
	}
	goAct <- true
	a := <-actDone
	res.startNs = a.startNs
	res.start = res.base.Add(time.Duration(a.startNs))
	res.returned = time.Duration(a.retNs - a.startNs)
	aerr := a.err
	finish()
	if aerr != nil {
		return res, fmt.Errorf("action: %w", aerr)
	}
	if sendErr != nil {
		return res, sendErr
	}
	return res, nil
}
