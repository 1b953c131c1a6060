package client

import (
	"testing"
	"time"
)

func TestPacerSendTime(t *testing.T) {
	now := time.Now()
	var closed *pacer
	if got := closed.sendTime(now); !got.Equal(now) {
		t.Fatalf("closed loop: latency must start at the send, got %v", got.Sub(now))
	}
	p := &pacer{start: now.Add(-time.Second), perSec: 1000, done: 500} // next due 0.5 s ago
	if got := p.sendTime(now); !got.Equal(now.Add(-500 * time.Millisecond)) {
		t.Fatalf("behind schedule: latency must start at the scheduled send, got %v", got.Sub(now))
	}
	p.slept = true // the last wait slept until the due time: start now
	if got := p.sendTime(now); !got.Equal(now) {
		t.Fatalf("ahead of schedule: got %v", got.Sub(now))
	}
}
