package l4lb

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

// parseProcCPU returns utime + stime of a /proc/PID/stat line: fields 14
// and 15, counted after the command name, which is in parentheses and may
// itself contain spaces and parentheses.
func parseProcCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("proc stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, errors.New("proc stat: too few fields")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 63)
	s, err2 := strconv.ParseUint(f[12], 10, 63)
	if err := errors.Join(err1, err2); err != nil {
		return 0, errors.New("proc stat: utime or stime not a number")
	}
	const maxTicks = (1<<63 - 1) / int64(time.Second/userHZ)
	if int64(u) > maxTicks || int64(s) > maxTicks-int64(u) {
		return 0, errors.New("proc stat: times out of range")
	}
	return time.Duration(u+s) * (time.Second / userHZ), nil
}
