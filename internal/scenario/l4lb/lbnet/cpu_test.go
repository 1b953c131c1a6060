package lbnet

import "testing"

func TestParseSoftnetStat(t *testing.T) {
	tests := []struct {
		name, text string
		want       []SoftnetCPU
		err        bool
	}{
		{"with cpu index", "0000000a 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000003 00000000 00000000 00000000\n" +
			"000000ff 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000010 00000000 00000000 00000002\n",
			[]SoftnetCPU{{CPU: 0, Processed: 10, ReceivedRPS: 3}, {CPU: 2, Processed: 255, ReceivedRPS: 16}}, false},
		{"old kernel, no index", "00000001 0 0 0 0 0 0 0 0 00000002 0\n00000003 0 0 0 0 0 0 0 0 00000004 0",
			[]SoftnetCPU{{CPU: 0, Processed: 1, ReceivedRPS: 2}, {CPU: 1, Processed: 3, ReceivedRPS: 4}}, false},
		{"too few columns", "00000001 0 0", nil, true},
		{"not hex", "0000000g 0 0 0 0 0 0 0 0 0 0", nil, true},
		{"empty", "", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseSoftnetStat(tt.text)
		if (err != nil) != tt.err {
			t.Errorf("%s: error %v, want error %v", tt.name, err, tt.err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: CPU line %d = %+v, want %+v", tt.name, i, got[i], tt.want[i])
			}
		}
	}
}

func TestSYNFloodAchieved(t *testing.T) {
	if r := (SYNFloodResult{Sent: 500, Duration: 500e6}); r.Achieved() != 1000 {
		t.Errorf("achieved %v, want 1000", r.Achieved())
	}
	if r := (SYNFloodResult{Sent: 5}); r.Achieved() != 0 {
		t.Errorf("no duration: achieved %v, want 0", r.Achieved())
	}
}
