package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func TestWriteNftScript(t *testing.T) {
	cidrs := []netip.Prefix{
		netip.MustParsePrefix("240.0.0.0/24"), netip.MustParsePrefix("240.0.1.1/32"), netip.MustParsePrefix("240.0.2.0/30"),
	}
	for _, tc := range []struct {
		perLine, lines int
		wantErr        bool
	}{{1, 3, false}, {2, 2, false}, {10, 1, false}, {0, 0, true}} {
		var b bytes.Buffer
		err := writeNftScript(&b, "n0", cidrs, tc.perLine)
		if (err != nil) != tc.wantErr {
			t.Fatalf("perLine %d: err %v, want error %v", tc.perLine, err, tc.wantErr)
		}
		if err != nil {
			continue
		}
		s := b.String()
		if got := strings.Count(s, "add element ip cnb_egress deny {"); got != tc.lines {
			t.Errorf("perLine %d: %d add-element lines, want %d:\n%s", tc.perLine, got, tc.lines, s)
		}
		for _, p := range cidrs {
			if !strings.Contains(s, p.String()) {
				t.Errorf("perLine %d: %s missing", tc.perLine, p)
			}
		}
		for _, want := range []string{"flags interval;", "hook forward priority filter - 1;", `iifname "n0" ip daddr @deny counter name dropped drop`} {
			if !strings.Contains(s, want) {
				t.Errorf("perLine %d: %q missing:\n%s", tc.perLine, want, s)
			}
		}
	}
}

func TestWriteIPSetRestore(t *testing.T) {
	var b bytes.Buffer
	cidrs := []netip.Prefix{netip.MustParsePrefix("240.0.0.0/24"), netip.MustParsePrefix("240.0.1.1/32")}
	if err := writeIPSetRestore(&b, "cnb-egress", 1024, 66560, cidrs); err != nil {
		t.Fatal(err)
	}
	want := "create cnb-egress hash:net family inet hashsize 1024 maxelem 66560\nadd cnb-egress 240.0.0.0/24\nadd cnb-egress 240.0.1.1/32\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestParseChildResult(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
	}{
		{`{"sec":0.25,"vmhwm_bytes":1000,"method":"x"}`, false},
		{`{"sec":0,"vmhwm_bytes":1000}`, true},
		{`{"sec":1,"vmhwm_bytes":0}`, true},
		{`not json`, true},
	} {
		_, err := parseChildResult([]byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err %v, want error %v", tc.in, err, tc.wantErr)
		}
	}
}

func f64(v float64) *float64 { return &v }

// trials builds n rounds with cnibench taking a(i) s and the peer b(i) s
// (b nil: no peer).
func trials(n int, a, b func(i int) float64, rss int64) []EgressTrial {
	var ts []EgressTrial
	for i := 1; i <= n; i++ {
		ts = append(ts, EgressTrial{Round: i, Side: "cnibench", Sec: f64(a(i)), VmHWM: rss})
		if b != nil {
			ts = append(ts, EgressTrial{Round: i, Side: "peer", Sec: f64(b(i)), VmHWM: 2 * rss})
		}
	}
	return ts
}

func TestEgressRowFinish(t *testing.T) {
	jitter := func(base float64) func(int) float64 {
		return func(i int) float64 { return base * (1 + 0.01*float64(i%3)) }
	}
	for _, tc := range []struct {
		name        string
		row         EgressRow
		plan        bool
		verdict     string
		rssVerdict  string
		kind        string
		wantTimeCI  bool
		wantRatioLo float64 // the interval's lower bound is at least this
	}{
		{"speed-up met", EgressRow{Peer: "nft", TargetRatio: 2, RSSLimit: 200 << 20, Trials: trials(12, jitter(1), jitter(3), 50<<20)},
			true, VerdictMet, VerdictMet, KindGoal, false, 2.5},
		{"speed-up missed, rss missed", EgressRow{Peer: "nft", TargetRatio: 2, RSSLimit: 10 << 20, Trials: trials(12, jitter(1), jitter(1.2), 50<<20)},
			true, VerdictMissed, VerdictMissed, KindGoal, false, 1},
		{"absolute met", EgressRow{TargetSec: 0.3, RSSLimit: 100 << 20, Trials: trials(12, jitter(0.2), nil, 30<<20)},
			true, VerdictMet, VerdictMet, KindGoal, true, 1.4},
		{"absolute missed, exploratory", EgressRow{TargetSec: 0.3, Trials: trials(6, jitter(0.5), nil, 30<<20)},
			false, VerdictMissed, "", KindExploratory, true, 0},
		{"absolute straddling", EgressRow{TargetSec: 0.3, Trials: trials(12, func(i int) float64 { return 0.25 + 0.01*float64(i) }, nil, 1)},
			true, VerdictInconclusive, "", KindGoal, true, 0},
		{"no data", EgressRow{Peer: "ipset", TargetRatio: 1}, true, VerdictInconclusive, "", KindGoal, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.row
			rounds := 12
			if !tc.plan {
				rounds = 6
			}
			r.finish(rounds, tc.plan)
			if r.Verdict != tc.verdict || r.RSSVerdict != tc.rssVerdict || r.Kind != tc.kind {
				t.Errorf("verdict %q rss %q kind %q, want %q %q %q", r.Verdict, r.RSSVerdict, r.Kind, tc.verdict, tc.rssVerdict, tc.kind)
			}
			if (r.TimeCI != nil) != tc.wantTimeCI {
				t.Errorf("time interval %+v, want one: %v", r.TimeCI, tc.wantTimeCI)
			}
			if r.TimeCI != nil && !(r.TimeCI.Lo <= r.TimeCI.Estimate && r.TimeCI.Estimate <= r.TimeCI.Hi) {
				t.Errorf("time interval %+v not ordered", r.TimeCI)
			}
			if r.CI != nil && r.CI.Lo < tc.wantRatioLo {
				t.Errorf("interval %+v: lower bound below %v", r.CI, tc.wantRatioLo)
			}
			var md bytes.Buffer
			(&EgressReport{Rows: []*EgressRow{&r}}).writeMarkdown(&md)
			if !strings.Contains(md.String(), fmtVerdict(r.Verdict)) {
				t.Errorf("markdown lacks the verdict:\n%s", md.String())
			}
		})
	}
}
