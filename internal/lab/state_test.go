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

func TestParseProcStatStart(t *testing.T) {
	// Field 22 (starttime) is 8723; the name contains spaces and ')'.
	stat := "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 8723 10000 200 18446744073709551615"
	got, err := parseProcStatStart(stat)
	if err != nil || got != 8723 {
		t.Errorf("parseProcStatStart = %d, %v; want 8723", got, err)
	}
	if _, err := parseProcStatStart("1234 (x) S 1"); err == nil {
		t.Error("short stat accepted")
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
