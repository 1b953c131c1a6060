package lab

import (
	"context"
	"os"
	"slices"
	"testing"
)

// TestStatelessNamespaces: cnb- namespaces without a state file (another
// tool's test, or a crash before the state was written) are in use while a
// process holds them, and leaked once nobody does.
func TestStatelessNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
	runID, err := NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	runID = "s" + runID
	ns, err := createNS(NSName(runID, "test", RoleNode1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.close(); _ = removeNS(ns.Name) })
	find := func() RunStatus {
		t.Helper()
		runs, err := Status()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(runs, func(r RunStatus) bool { return r.RunID == runID })
		if i < 0 {
			t.Fatalf("run %s missing from Status", runID)
		}
		return runs[i]
	}
	if r := find(); !r.OwnerAlive || r.Leaked || r.State != nil {
		t.Errorf("held namespace: %+v, want in use", r)
	}
	res, err := Cleanup(context.Background(), CleanupOptions{RunID: runID})
	if err != nil || !slices.Equal(res.Kept, []string{runID}) {
		t.Errorf("Cleanup of a held namespace: %+v, %v; want it kept", res, err)
	}
	ns.close()
	if r := find(); r.OwnerAlive || !r.Leaked {
		t.Errorf("released namespace: %+v, want leaked", r)
	}
	res, err = Cleanup(context.Background(), CleanupOptions{RunID: runID})
	if err != nil || !slices.Equal(res.Removed, []string{runID}) {
		t.Errorf("Cleanup of a leaked namespace: %+v, %v", res, err)
	}
	if _, err := os.Stat(ns.Path()); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Cleanup (stat: %v)", ns.Path(), err)
	}
}
