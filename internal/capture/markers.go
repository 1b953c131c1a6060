package capture

import (
	"errors"
	"fmt"

	"github.com/cnibench/cnibench/internal"
)

// ErrNotSupported is wrapped by the errors of what this OS or interface
// cannot capture.
var ErrNotSupported = internal.ErrNotSupported

// minMarker is the shortest marker accepted: a shorter one could turn up
// by chance in encrypted bytes.
const minMarker = 16

func checkMarkers(markers [][]byte) error {
	if len(markers) == 0 {
		return errors.New("no marker to look for")
	}
	for i, m := range markers {
		if len(m) < minMarker {
			return fmt.Errorf("marker %d is %d bytes: need at least %d", i, len(m), minMarker)
		}
	}
	return nil
}

// cloneMarkers copies the markers, which the caller may change afterwards.
func cloneMarkers(markers [][]byte) [][]byte {
	out := make([][]byte, len(markers))
	for i, m := range markers {
		out[i] = append([]byte(nil), m...)
	}
	return out
}
