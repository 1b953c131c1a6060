package agent

import (
	"context"
	"strings"
	"testing"
)

func TestProfileDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Profile
		want string
	}{
		{"refused", Profile{Error: "perf_event_paranoid is 4"}, "perf_event_paranoid"},
		{"empty", Profile{Schema: SchemaProfile}, "no profile"},
		{"garbage", Profile{Schema: SchemaProfile, PprofGz: []byte("not a profile")}, "decode its pprof"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.r.Decode(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunProfileNoDuration(t *testing.T) {
	rep, err := RunProfile(context.Background(), ProfileOptions{})
	if err == nil || rep.Error == "" || rep.Schema != SchemaProfile {
		t.Errorf("RunProfile without a duration: %+v, %v", rep, err)
	}
}
