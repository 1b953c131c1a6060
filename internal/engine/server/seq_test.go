package server

import (
	"testing"
)

func TestSeqTracker(t *testing.T) {
	tests := []struct {
		name                                  string
		seqs                                  []uint64
		unique, gaps, dups, reordered, nbytes uint64
	}{
		{"in order", []uint64{5, 6, 7, 8}, 4, 0, 0, 0, 40},
		{"a loss", []uint64{1, 2, 4, 5}, 4, 1, 0, 0, 40},
		{"reordered fills its gap", []uint64{1, 3, 2, 4}, 4, 0, 0, 1, 40},
		{"duplicate", []uint64{1, 2, 2, 3}, 3, 0, 1, 0, 30},
		{"duplicate of a late one", []uint64{1, 3, 2, 2}, 3, 0, 1, 1, 30},
		{"big jump clears the window", []uint64{1, 5000, 2}, 3, 4997, 0, 1, 30},
	}
	for _, tt := range tests {
		var tr seqTracker
		for _, s := range tt.seqs {
			tr.add(s, 10)
		}
		if tr.Unique() != tt.unique || tr.Gaps != tt.gaps || tr.Dups != tt.dups || tr.Reordered != tt.reordered || tr.Bytes != tt.nbytes {
			t.Errorf("%s: unique %d gaps %d dups %d reordered %d bytes %d; want %d %d %d %d %d", tt.name,
				tr.Unique(), tr.Gaps, tr.Dups, tr.Reordered, tr.Bytes, tt.unique, tt.gaps, tt.dups, tt.reordered, tt.nbytes)
		}
	}
}
