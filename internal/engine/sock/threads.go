package sock

import (
	"runtime"
	"sync"
	"time"
)

// Each flow's goroutine is locked to its own OS thread and spends most of
// its time blocked in a system call. If every P (GOMAXPROCS) is held by such
// a thread, Go's sysmon keeps waking every 20 µs to take Ps back from
// "long" system calls, costing context switches and CPU on every
// transaction. Keeping GOMAXPROCS above the number of blocked flows leaves
// an idle P, so sysmon lets blocked threads be and backs off.
var threads struct {
	sync.Mutex
	reserved int
	base     int
}

// ReserveThreads raises GOMAXPROCS for n more blocking flow threads.
func ReserveThreads(n int) {
	threads.Lock()
	defer threads.Unlock()
	if threads.base == 0 {
		threads.base = runtime.GOMAXPROCS(0)
	}
	threads.reserved += n
	if want := threads.base + threads.reserved + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// ReleaseThreads undoes ReserveThreads once the flows have ended.
func ReleaseThreads(n int) {
	threads.Lock()
	defer threads.Unlock()
	threads.reserved -= n
	if threads.reserved <= 0 {
		threads.reserved = 0
		if threads.base > 0 {
			runtime.GOMAXPROCS(threads.base)
		}
	}
}

// A goroutine that never leaves its OS thread looks "long-running" to
// sysmon after 10 ms on one scheduling tick, and sysmon then takes its P
// away on every system call — and wakes every 20 µs to do so. Flow loops
// therefore call Yield on every iteration, which reschedules the goroutine
// (a new scheduling tick) every couple of milliseconds: a few µs every few
// milliseconds instead of a P hand-off per transaction.
// yieldAfter is how long a flow goroutine may go without being rescheduled
// (sysmon's limit is 10 ms); the clock is read every yieldCheck iterations.
const (
	yieldAfter = 5 * time.Millisecond
	yieldCheck = 16
)

// Yielder reschedules a flow goroutine every few milliseconds (Yield).
type Yielder struct {
	n    uint32
	last time.Time
}

func (y *Yielder) Yield() {
	y.n++
	if y.n%yieldCheck != 0 {
		return
	}
	if now := time.Now(); now.Sub(y.last) > yieldAfter {
		y.last = now
		runtime.Gosched()
	}
}
