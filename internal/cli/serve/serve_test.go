package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/engine"
)

func validFlags() flagpole {
	d := engine.DefaultLimits()
	return flagpole{MaxSessions: d.MaxSessions, MaxPending: d.MaxPending, MaxFlows: d.MaxFlows, MaxBufferMem: "256M",
		HelloTimeout: d.HelloTimeout, IdleTimeout: d.IdleTimeout, MaxWindow: d.MaxWindow}
}

func TestLimitFlags(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*flagpole)
		want string // error substring; "" = valid
	}{
		{"defaults", func(*flagpole) {}, ""},
		{"zero sessions", func(f *flagpole) { f.MaxSessions = 0 }, "--max-sessions 0: must be at least 1"},
		{"negative flows", func(f *flagpole) { f.MaxFlows = -1 }, "--max-flows -1"},
		{"bad memory", func(f *flagpole) { f.MaxBufferMem = "lots" }, "--max-buffer-mem lots"},
		{"tiny memory", func(f *flagpole) { f.MaxBufferMem = "1K" }, "at least 1M"},
		{"short idle", func(f *flagpole) { f.IdleTimeout = time.Millisecond }, "--idle-timeout 1ms"},
	}
	for _, tc := range tests {
		f := validFlags()
		tc.mod(&f)
		_, err := f.limits()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestTokenFromEnv(t *testing.T) {
	t.Setenv(engine.TokenEnv, "from-env")
	f := validFlags()
	lim, err := f.limits()
	if err != nil || lim.Token != "from-env" {
		t.Fatalf("token from %s: %q, %v", engine.TokenEnv, lim.Token, err)
	}
	f.Token = "from-flag"
	if lim, _ := f.limits(); lim.Token != "from-flag" {
		t.Fatalf("--token must win over the environment, got %q", lim.Token)
	}
	if lim.MaxBufferBytes != 256<<20 {
		t.Fatalf("--max-buffer-mem 256M = %d bytes", lim.MaxBufferBytes)
	}
}
