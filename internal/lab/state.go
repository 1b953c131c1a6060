package lab

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// StateSchema identifies the format of a lab state file.
const StateSchema = "cnibench-lab/v1"

// RunDir holds the lock file and one state file per running lab.
const RunDir = "/run/cnibench"

// State is what /run/cnibench/<runid>.json records about a lab, so that
// `cnibench lab status` and `cnibench lab down` work from another process.
type State struct {
	Schema string `json:"schema"`
	RunID  string `json:"run_id"`
	PID    int    `json:"pid"`
	// PIDStart is the owner's start time (clock ticks after boot, field 22
	// of /proc/<pid>/stat): a reused pid does not make a dead lab look alive.
	PIDStart uint64 `json:"pid_start"`
	// Detached is set by `cnibench lab up`: the lab is meant to outlive its
	// creator and is not leaked when that process is gone.
	Detached  bool            `json:"detached"`
	Created   time.Time       `json:"created"`
	WireMTU   int             `json:"wire_mtu"`
	Wire      string          `json:"wire,omitempty"`
	Datapaths []DatapathState `json:"datapaths"`
}

// DatapathState records one datapath of a lab.
type DatapathState struct {
	Name       string      `json:"name"`
	Skipped    string      `json:"skipped,omitempty"` // reason, if the datapath could not run here
	Namespaces []string    `json:"namespaces,omitempty"`
	PodMTU     int         `json:"pod_mtu,omitempty"`
	PathMTU    int         `json:"path_mtu,omitempty"`
	Paths      []PathState `json:"paths,omitempty"`
}

// PathState records one client/server pair of a datapath.
type PathState struct {
	Kind     PathKind `json:"kind"`
	Client   string   `json:"client"`    // namespace name
	Server   string   `json:"server"`    // namespace name
	ServerIP string   `json:"server_ip"` // address the server listens on
}

// StatePath returns the state file of a run.
func StatePath(runID string) string { return filepath.Join(RunDir, runID+".json") }

// ParseState decodes and checks a state file.
func ParseState(data []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("decode lab state: %w", err)
	}
	if s.Schema != StateSchema {
		return nil, fmt.Errorf("lab state: schema %q, want %q", s.Schema, StateSchema)
	}
	if err := ValidateRunID(s.RunID); err != nil {
		return nil, fmt.Errorf("lab state: %w", err)
	}
	for _, d := range s.Datapaths {
		for _, ns := range d.Namespaces {
			p, ok := ParseNSName(ns)
			if !ok || p.RunID != s.RunID {
				return nil, fmt.Errorf("lab state: namespace %q does not belong to run %s", ns, s.RunID)
			}
		}
	}
	return &s, nil
}

// Marshal encodes the state as indented JSON.
func (s *State) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode lab state: %w", err)
	}
	return append(b, '\n'), nil
}
