package nscpu

import (
	"errors"
	"reflect"
	"testing"
)

func TestSub(t *testing.T) {
	before := map[uint64]Usage{
		1: {SoftirqNs: 100, Packets: 10},
		2: {SoftirqNs: 50, Packets: 5},
		3: {SoftirqNs: 70, Packets: 7},
		4: {SoftirqNs: 900, Packets: 90}, // gone: left out
	}
	after := map[uint64]Usage{
		1: {SoftirqNs: 150, Packets: 12},
		2: {SoftirqNs: 50, Packets: 5}, // idle: left out
		3: {SoftirqNs: 60, Packets: 9}, // inode reused: clamped, not wrapped
		5: {SoftirqNs: 30, Packets: 1}, // new
	}
	want := map[uint64]Usage{
		1: {SoftirqNs: 50, Packets: 2},
		3: {SoftirqNs: 0, Packets: 2},
		5: {SoftirqNs: 30, Packets: 1},
	}
	if got := Sub(after, before); !reflect.DeepEqual(got, want) {
		t.Errorf("Sub = %v, want %v", got, want)
	}
	if got := Sub(after, nil); !reflect.DeepEqual(got, after) {
		t.Errorf("Sub(after, nil) = %v, want %v", got, after)
	}
	if got := Sub(nil, before); len(got) != 0 {
		t.Errorf("Sub(nil, before) = %v, want empty", got)
	}
}

func TestSumAndInodes(t *testing.T) {
	u := map[uint64]Usage{
		7: {SoftirqNs: 1, Packets: 1},
		3: {SoftirqNs: 10, Packets: 2},
		5: {SoftirqNs: 100, Packets: 3},
	}
	if got, want := Sum(u, 3, 5, 3, 42), (Usage{SoftirqNs: 110, Packets: 5}); got != want {
		t.Errorf("Sum(3, 5, 3, 42) = %v, want %v (a repeated inode counts once, an unknown one adds nothing)", got, want)
	}
	if got := Sum(u); got != (Usage{}) {
		t.Errorf("Sum() = %v, want zero", got)
	}
	if got, want := Inodes(u), []uint64{3, 5, 7}; !reflect.DeepEqual(got, want) {
		t.Errorf("Inodes = %v, want %v", got, want)
	}
}

func TestNetRxOutside(t *testing.T) {
	for _, c := range []struct {
		t    Totals
		want uint64
	}{
		{Totals{NetRxNs: 1000, NetRxInsideNs: 800}, 200},
		{Totals{NetRxNs: 1000, NetRxInsideNs: 1000}, 0},
		// Per-CPU sums read while the programs run can be a little
		// inconsistent: never wrap.
		{Totals{NetRxNs: 1000, NetRxInsideNs: 1001}, 0},
	} {
		if got := c.t.NetRxOutside(); got != c.want {
			t.Errorf("%+v.NetRxOutside() = %d, want %d", c.t, got, c.want)
		}
	}
}

// TestProbeError: Probe returns nil or an error that wraps ErrNotSupported
// and says more than the sentinel.
func TestProbeError(t *testing.T) {
	err := Probe()
	if err == nil {
		return
	}
	if !errors.Is(err, ErrNotSupported) || err == ErrNotSupported {
		t.Errorf("Probe() = %v, want nil or a wrapped ErrNotSupported", err)
	}
}
