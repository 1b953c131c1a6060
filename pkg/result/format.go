package result

import (
	"fmt"
	"math"
)

// Format renders a metric value with a readable unit: bit rates in
// Gbit/s or Mbit/s, rates with k/M prefixes, times in µs or ms.
func Format(metric string, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	info := Info(metric)
	switch info.Unit {
	case "bit/s":
		switch {
		case v >= 1e9:
			return fmt.Sprintf("%.2f Gbit/s", v/1e9)
		case v >= 1e6:
			return fmt.Sprintf("%.1f Mbit/s", v/1e6)
		default:
			return fmt.Sprintf("%.0f kbit/s", v/1e3)
		}
	case "trans/s", "/s":
		unit := info.Unit
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2f M%s", v/1e6, unit)
		case v >= 1e4:
			return fmt.Sprintf("%.1f k%s", v/1e3, unit)
		default:
			return fmt.Sprintf("%.0f %s", v, unit)
		}
	case "µs":
		switch {
		case v >= 1e4:
			return fmt.Sprintf("%.1f ms", v/1e3)
		case v >= 100:
			return fmt.Sprintf("%.0f µs", v)
		default:
			return fmt.Sprintf("%.1f µs", v)
		}
	case "%", "% of a core":
		return fmt.Sprintf("%.1f %%", v)
	case "bytes":
		switch {
		case v >= 1<<30:
			return fmt.Sprintf("%.1f GiB", v/(1<<30))
		case v >= 1<<20:
			return fmt.Sprintf("%.1f MiB", v/(1<<20))
		case v >= 1<<10:
			return fmt.Sprintf("%.1f KiB", v/(1<<10))
		default:
			return fmt.Sprintf("%.0f B", v)
		}
	case "":
		return fmt.Sprintf("%.4g", v)
	case "datagrams", "segments", "errors", "entries", "packets", "fragments", "failures":
		return fmt.Sprintf("%.0f %s", v, info.Unit)
	default:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			// A whole count in full: "20000 objects", not "2e+04 objects".
			return fmt.Sprintf("%.0f %s", v, info.Unit)
		}
		return fmt.Sprintf("%.4g %s", v, info.Unit)
	}
}
