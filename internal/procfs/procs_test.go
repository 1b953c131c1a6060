package procfs

import (
	"slices"
	"testing"
)

func TestSnapshotTree(t *testing.T) {
	s := Snapshot{
		1:  {PID: 1, UTime: 1000},
		10: {PID: 10, PPID: 1, UTime: 3, STime: 2, CUTime: 40},
		11: {PID: 11, PPID: 10, UTime: 1},
		12: {PID: 12, PPID: 11, STime: 7, CSTime: 1},
		20: {PID: 20, PPID: 1, UTime: 500},
	}
	tree, err := s.Tree(10)
	if err != nil {
		t.Fatal(err)
	}
	if tree[0] != 10 {
		t.Errorf("tree %v does not start at its root", tree)
	}
	slices.Sort(tree)
	if !slices.Equal(tree, []int{10, 11, 12}) {
		t.Errorf("tree of 10 = %v, want 10, 11, 12", tree)
	}
	for _, tc := range []struct {
		reaped bool
		want   uint64
	}{{false, 13}, {true, 54}} {
		if got, err := s.TreeTicks(10, tc.reaped); err != nil || got != tc.want {
			t.Errorf("TreeTicks(10, %v) = %d, %v; want %d", tc.reaped, got, err, tc.want)
		}
	}
	if _, err := s.TreeTicks(99, false); err == nil {
		t.Error("a process not in the snapshot has a CPU time")
	}
}

func TestSnapshotAncestors(t *testing.T) {
	s := Snapshot{
		1:   {PID: 1, UTime: 10, CUTime: 5},
		2:   {PID: 2, Flags: 0x00200000, STime: 99}, // kthreadd
		50:  {PID: 50, PPID: 1, UTime: 7},
		60:  {PID: 60, PPID: 50, STime: 3},
		61:  {PID: 61, PPID: 60, UTime: 2, CSTime: 1},
		900: {PID: 900, PPID: 4242, UTime: 1}, // its parent is gone
	}
	if got := s.Ancestors(61); !slices.Equal(got, []int{60, 50, 1}) {
		t.Errorf("Ancestors(61) = %v, want 60 50 1", got)
	}
	if got := s.Ancestors(900); len(got) != 0 {
		t.Errorf("Ancestors(900) = %v, want none", got)
	}
	// A loop of parents (not a real /proc, but a snapshot read while pids
	// are reused could show one) ends.
	loop := Snapshot{3: {PID: 3, PPID: 4}, 4: {PID: 4, PPID: 3}}
	if got := loop.Ancestors(3); !slices.Equal(got, []int{4}) {
		t.Errorf("Ancestors in a loop = %v", got)
	}
}
