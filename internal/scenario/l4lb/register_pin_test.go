package l4lb

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cnibench/cnibench/internal/scenario"
)

// --lb-cpu split without --pin same is refused when the scenario is built,
// before any lab exists; with --pin same, or a backend without a pin, it
// builds.
func TestSplitNeedsPinSame(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string // "" builds
	}{
		{"pin none", map[string]string{"pin": "none"}, "--lb-cpu split: needs --pin same"},
		{"pin split", map[string]string{"pin": "split"}, "this run has --pin split"},
		{"pin same", map[string]string{"pin": "same"}, ""},
		{"no pin", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			build := flags(fs)
			if err := fs.Parse([]string{"--lb-cpu", "split"}); err != nil {
				t.Fatal(err)
			}
			_, err := build(scenario.Common{Backend: "lab", BackendConfig: tc.cfg, Changed: fs.Changed})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
