package profile

import "time"

// TimeLabel is the numeric label (Unix nanoseconds, wall clock) that a
// profile taken with Options.Timestamps gives every sample: the start of
// the TimestampResolution bucket the sample fell in. Crop keeps the
// samples of given windows by it and removes it.
const TimeLabel = "wall_ns"

// TimestampResolution is the width of the time buckets of
// Options.Timestamps: the samples of one stack within a bucket are
// aggregated, and Crop places a window's edges to this precision.
const TimestampResolution = 10 * time.Millisecond

// timestamper maps the perf clock (CLOCK_MONOTONIC, see attr) to
// wall-clock buckets: offset is the wall clock minus the monotonic clock,
// taken at Start. A zero timestamper keeps no times.
type timestamper struct {
	on     bool
	offset int64
}

// bucket returns the wall-clock bucket of a perf time in Unix ns, or 0.
func (t timestamper) bucket(perfNS uint64) int64 {
	if !t.on {
		return 0
	}
	wall := int64(perfNS) + t.offset
	res := int64(TimestampResolution)
	return wall - wall%res
}
