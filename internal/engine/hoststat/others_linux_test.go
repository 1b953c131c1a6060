package hoststat

import (
	"context"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/procfs"
	"github.com/cnibench/cnibench/internal/testutil"
)

// A busy loop that is neither this process's descendant nor its ancestor
// (an orphan: its parent exits at once) is another program: the idle
// probe counts it, about a core's worth, where /proc/stat less this
// process's own CPU would count it too — and the two methods agree on it.
func TestProbeCountsAnOrphanHog(t *testing.T) {
	if host, err := procfs.HostPIDNamespace(); err != nil || !host {
		t.Skipf("not in the host's pid namespace (%v): other programs are not visible", err)
	}
	pid := testutil.StartOrphanHog(t)
	f, _, err := ProbeForeign(context.Background(), 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	st, err := procfs.ReadStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("foreign %.0f %% of a core beside the busy loop", f)
	// The hog has the CPU it can get on a host that may be busy: ask for
	// a third of a core.
	if f < 33 {
		t.Errorf("foreign %.0f %% of a core beside a busy loop (pid %d, %d ticks so far, state %c)", f, pid, st.Ticks(), st.State)
	}
}
