package procfs

import "fmt"

// Snapshot is the stat of every process read at one moment, by pid.
type Snapshot map[int]Stat

// Tree lists root and its descendants, root first; an error if root is
// not in the snapshot (it ended).
func (s Snapshot) Tree(root int) ([]int, error) {
	if _, ok := s[root]; !ok {
		return nil, fmt.Errorf("process %d is gone", root)
	}
	children := map[int][]int{}
	for pid, st := range s {
		if pid != root {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	}
	tree := []int{root}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, nil
}

// TreeTicks is the CPU time of root and its descendants in ticks: each
// live process's own time plus, with reaped, what its reaped children used
// (a child that ended is counted in its parent).
func (s Snapshot) TreeTicks(root int, reaped bool) (uint64, error) {
	tree, err := s.Tree(root)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, pid := range tree {
		if reaped {
			total += s[pid].TicksWithReaped()
		} else {
			total += s[pid].Ticks()
		}
	}
	return total, nil
}

// Ancestors lists pid's parent, its parent's parent, … up to the first
// process not in the snapshot (pid 1's parent is 0).
func (s Snapshot) Ancestors(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	for p := s[pid].PPID; p > 0 && !seen[p]; p = s[p].PPID {
		if _, ok := s[p]; !ok {
			break
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}
