package procfs

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Stat
		err        string
	}{
		{"nginx worker", "4242 (nginx) S 4241 4241 4241 0 -1 4194624 100 0 0 0 17 5 0 0 20 0 1 0 123 1000 10 18446744073709551615",
			Stat{PID: 4242, Comm: "nginx", State: 'S', PPID: 4241, Flags: 4194624, UTime: 17, STime: 5, StartTime: 123}, ""},
		{"comm with spaces and parens", "1234 (sshd: root) [priv]) S 77 1234 1234 0 -1 4194560 100 0 0 0 10 20 30 40 20 0 1 0 8723 1000 10\n",
			Stat{PID: 1234, Comm: "sshd: root) [priv]", State: 'S', PPID: 77, Flags: 4194560, UTime: 10, STime: 20, CUTime: 30, CSTime: 40, StartTime: 8723}, ""},
		{"kernel thread", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 3 0 0 20 0 1 0 1 0 0",
			Stat{PID: 2, Comm: "kthreadd", State: 'S', Flags: 2129984, STime: 3, StartTime: 1}, ""},
		{"no comm", "7 nginx S 1 2 3", Stat{}, "no (comm)"},
		{"comm not closed", "7 (x S 1", Stat{}, "no (comm)"},
		{"short", "1234 (x) S 1", Stat{}, "fields after (comm)"},
		{"bad pid", "x (x) S 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5", Stat{}, "pid"},
		{"bad ppid", "7 (x) S p 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5", Stat{}, "ppid"},
		{"bad utime", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 u 4 0 0 20 0 1 0 5", Stat{}, "utime"},
		{"bad state", "7 (x) SS 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5", Stat{}, "state"},
		{"negative cstime", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 3 4 0 -1 20 0 1 0 5", Stat{}, "cstime"},
		{"out of range", "7 (x) S 1 7 7 0 -1 0 0 0 0 0 18446744073709551615 1 0 0 20 0 1 0 5", Stat{}, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStat(tc.line)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestStatTimes(t *testing.T) {
	st := Stat{UTime: 250, STime: 75, CUTime: 5, CSTime: 1, Flags: 0x00200040}
	if st.Ticks() != 325 || st.TicksWithReaped() != 331 || !st.KernelThread() {
		t.Errorf("%+v: ticks %d, with reaped %d, kernel thread %v", st, st.Ticks(), st.TicksWithReaped(), st.KernelThread())
	}
	if d := Duration(325); d != 3250*time.Millisecond {
		t.Errorf("Duration(325) = %v", d)
	}
	if d := Duration(math.MaxUint64); d != math.MaxInt64 {
		t.Errorf("Duration(max) = %v, want it saturated", d)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("4242 (nginx) S 4241 4241 4241 0 -1 4194624 100 0 0 0 17 5 0 0 20 0 1 0 123 1000 10")
	f.Add("7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 5")
	f.Add("1 ((() S")
	f.Fuzz(func(t *testing.T, line string) {
		st, err := ParseStat(line)
		if err != nil {
			return
		}
		if st.PID < 0 || st.PPID < 0 {
			t.Fatalf("negative pid in %+v", st)
		}
		if st.TicksWithReaped() < st.Ticks() || Duration(st.TicksWithReaped()) < 0 {
			t.Fatalf("times overflow in %+v", st)
		}
		if !strings.Contains(line, "("+st.Comm+")") {
			t.Fatalf("comm %q not in the line", st.Comm)
		}
	})
}
