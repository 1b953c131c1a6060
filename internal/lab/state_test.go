package lab

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var errorsIs = errors.Is

func TestStateRoundTrip(t *testing.T) {
	s := &State{
		Schema: StateSchema, RunID: "abc123", PID: 42, PIDStart: 1000, Detached: true,
		Created: time.Date(2026, 11, 22, 15, 0, 0, 0, time.UTC), WireMTU: 1500,
		Datapaths: []DatapathState{
			{Name: "baseline", Namespaces: []string{NSName("abc123", "baseline", RoleNode1)}, PodMTU: 1500, PathMTU: 1500,
				Paths: []PathState{{Kind: NodeToNode, Client: "cnb-abc123-baseline-node1", Server: "cnb-abc123-baseline-node2", ServerIP: "198.18.0.2"}}},
			{Name: "netkit", Skipped: "netkit device not supported: ..."},
		},
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseState(b)
	if err != nil {
		t.Fatalf("ParseState(Marshal()): %v\n%s", err, b)
	}
	if got.RunID != s.RunID || got.PID != 42 || !got.Detached || len(got.Datapaths) != 2 ||
		got.Datapaths[0].Paths[0].Kind != NodeToNode || !got.Created.Equal(s.Created) {
		t.Errorf("round trip changed the state:\n got %+v\nwant %+v", got, s)
	}
}

func TestParseStateRejects(t *testing.T) {
	for name, tc := range map[string]struct{ json, want string }{
		"not json":       {`{`, "decode lab state"},
		"wrong schema":   {`{"schema":"other/v9","run_id":"abc"}`, `schema "other/v9"`},
		"bad run id":     {`{"schema":"cnibench-lab/v1","run_id":"A-B"}`, "run id"},
		"foreign netns":  {`{"schema":"cnibench-lab/v1","run_id":"abc","datapaths":[{"name":"x","namespaces":["cnb-def-x-node1"]}]}`, "does not belong"},
		"not a lab name": {`{"schema":"cnibench-lab/v1","run_id":"abc","datapaths":[{"name":"x","namespaces":["host"]}]}`, "does not belong"},
	} {
		_, err := ParseState([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseState error %v, want it to contain %q", name, err, tc.want)
		}
	}
}

func TestValidateOptions(t *testing.T) {
	if len(Names()) == 0 {
		t.Skip("no datapath registered on this OS")
	}
	o, err := ValidateOptions(Options{})
	if err != nil || o.MTU != DefaultMTU || len(o.Datapaths) != len(Names()) {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	for _, bad := range []Options{
		{MTU: 1279}, {MTU: 65536}, {Datapaths: []string{"nope"}},
		{Datapaths: []string{"baseline", "baseline"}}, {RunID: "Bad-Id"},
	} {
		if _, err := ValidateOptions(bad); err == nil {
			t.Errorf("ValidateOptions(%+v) accepted", bad)
		}
	}
}
