//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package nscpu

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/testutil"
)

// overheadEnv enables TestOverhead, a measurement rather than a check (it
// takes about 20 s and its figures depend on the machine's load).
const overheadEnv = "CNB_NSCPU_OVERHEAD"

// TestOverhead measures what the accountant costs: 64-byte UDP datagrams
// from A through B to C, as fast as one sending thread goes, in pairs of
// short runs without and with the accountant (alternating which comes
// first, so that drift cancels), reporting the medians and the quartiles
// of the paired differences. The sender's sendmsg runs B's and C's receive
// in its own local_bh_enable, so the sending thread's CPU time per
// datagram covers the whole path and its increase is the probes' cost per
// datagram: two netif_receive_skb events (B, C), a napi_poll per backlog
// poll and a softirq_entry/_exit pair per softirq run (about one each per
// datagram here). Other load on the machine makes single runs vary by
// ±10%; the paired median is steadier.
func TestOverhead(t *testing.T) {
	if os.Getenv(overheadEnv) != "1" {
		t.Skipf("a measurement: set %s=1 to run it", overheadEnv)
	}
	testutil.SkipUnlessRoot(t)
	testutil.SkipIfNotSupported(t, Probe(), ErrNotSupported)
	l := newLine(t, false)
	flow := l.udpFlow(t)
	flow.send(time.Second) // warm-up

	const (
		pairs = 30
		run   = 300 * time.Millisecond
	)
	type result struct{ pps, nsPer float64 }
	measure := func(with bool) result {
		var a *Accountant
		if with {
			var err error
			if a, err = Start(); err != nil {
				t.Fatal(err)
			}
		}
		flow.received.Store(0)
		begin := time.Now()
		sent, cpu := flow.send(run)
		elapsed := time.Since(begin)
		if with {
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
		}
		return result{float64(flow.received.Load()) / elapsed.Seconds(), float64(cpu.Nanoseconds()) / float64(max(sent, 1))}
	}
	var offPPS, onPPS, offNs, onNs, dNs, dPPS []float64
	for i := range pairs {
		var off, on result
		if i%2 == 0 {
			off, on = measure(false), measure(true)
		} else {
			on, off = measure(true), measure(false)
		}
		offPPS, onPPS = append(offPPS, off.pps), append(onPPS, on.pps)
		offNs, onNs = append(offNs, off.nsPer), append(onNs, on.nsPer)
		dNs = append(dNs, on.nsPer-off.nsPer)
		dPPS = append(dPPS, 100*(on.pps-off.pps)/off.pps)
	}
	t.Logf("%d pairs of %v runs, 64-byte UDP A -> B -> C", pairs, run)
	t.Logf("without accountant: %.0f datagrams/s, sender CPU %.0f ns/datagram (medians)", quantile(offPPS, 0.5), quantile(offNs, 0.5))
	t.Logf("with accountant:    %.0f datagrams/s, sender CPU %.0f ns/datagram (medians)", quantile(onPPS, 0.5), quantile(onNs, 0.5))
	t.Logf("paired difference, sender CPU per datagram: median %+.0f ns (quartiles %+.0f, %+.0f)",
		quantile(dNs, 0.5), quantile(dNs, 0.25), quantile(dNs, 0.75))
	t.Logf("paired difference, rate: median %+.1f%% (quartiles %+.1f%%, %+.1f%%)",
		quantile(dPPS, 0.5), quantile(dPPS, 0.25), quantile(dPPS, 0.75))
}

// quantile returns the q-quantile of x (nearest rank).
func quantile(x []float64, q float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}
