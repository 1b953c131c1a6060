package profile

import (
	"time"

	"golang.org/x/sys/unix"
)

// newTimestamper reads the offset of the wall clock from CLOCK_MONOTONIC,
// between two monotonic readings so that it is off by at most half their
// gap (microseconds).
func newTimestamper() timestamper {
	var a, b unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &a) != nil {
		return timestamper{}
	}
	wall := time.Now().UnixNano()
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &b) != nil {
		return timestamper{}
	}
	mono := (a.Nano() + b.Nano()) / 2
	return timestamper{on: true, offset: wall - mono}
}
