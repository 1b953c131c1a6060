package profile

import (
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
	"golang.org/x/sys/unix"
)

// BenchmarkSamplerOverhead measures what sampling costs on a loopback TCP
// transfer saturating the machine: rounds of one second alternate without
// and with a session at the default frequency on every CPU. It reports the
// reader thread's CPU per second of sampling (reader-ms/s), the process's
// CPU per second with and without sampling (cpu-ms/s-off, cpu-ms/s-on) and
// the transfer's throughput and a spinning goroutine's work with sampling
// relative to without (tput-ratio, spin-ratio: below 1 is the total cost,
// the kernel's sampling interrupts included).
//
//	go test ./internal/profile -run '^$' -bench SamplerOverhead -benchtime 4x
func BenchmarkSamplerOverhead(b *testing.B) {
	testutil.SkipUnlessRoot(b)
	testutil.SkipIfNotSupported(b, Probe(), ErrNotSupported)
	const round = time.Second
	var offBytes, onBytes, offCPU, onCPU, reader, window, offSpin, onSpin float64
	for range b.N {
		for _, on := range []bool{false, true} {
			var s *Session
			if on {
				var err error
				if s, err = Start(Options{}); err != nil {
					b.Fatal(err)
				}
			}
			stop := make(chan struct{})
			before := rusageSelf()
			wait := loopbackTransfer(b, stop)
			spun := make(chan uint64)
			go func() { spun <- spinCount(stop) }()
			time.Sleep(round)
			close(stop)
			n := float64(wait())
			if on {
				onSpin += float64(<-spun)
			} else {
				offSpin += float64(<-spun)
			}
			cpu := (rusageSelf() - before).Seconds()
			if !on {
				offBytes += n
				offCPU += cpu
				continue
			}
			p, err := s.Stop()
			if err != nil {
				b.Fatal(err)
			}
			onBytes += n
			onCPU += cpu
			reader += p.ReaderCPU.Seconds()
			window += p.Window.Seconds()
		}
	}
	rounds := float64(b.N) * round.Seconds()
	b.ReportMetric(1000*reader/window, "reader-ms/s")
	b.ReportMetric(1000*offCPU/rounds, "cpu-ms/s-off")
	b.ReportMetric(1000*onCPU/rounds, "cpu-ms/s-on")
	b.ReportMetric(onBytes/offBytes, "tput-ratio")
	b.ReportMetric(onSpin/offSpin, "spin-ratio")
}

// spinCount counts loop iterations of pure computation until stop is
// closed: its rate with sampling over without is the CPU left to user code.
func spinCount(stop <-chan struct{}) uint64 {
	var n uint64
	x := uint64(1)
	for {
		for range 1 << 12 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		n++
		select {
		case <-stop:
			spinSink.Store(x)
			return n
		default:
		}
	}
}

func rusageSelf() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
