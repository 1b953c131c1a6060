package profile

import (
	"errors"
	"strings"

	"github.com/google/pprof/profile"
)

// NodePrefix starts the function name of the root frame AddNodeRoot gives
// every sample of a node's profile: "node:<node name>", above the
// "comm:<process>" frame, so that a flame graph of several nodes' merged
// profiles splits by node first. Breakdown and the top functions pass
// over it.
const NodePrefix = "node:"

// NodeLabel is the string label AddNodeRoot gives every sample (the node's
// name), for `go tool pprof -tagfocus node=NAME`.
const NodeLabel = "node"

// AddNodeRoot puts the root frame "node:<node>" (a location without
// mapping) above every sample's stack of p, and the label node=<node>;
// it changes p in place.
func AddNodeRoot(p *Profile, node string) error {
	if p == nil || p.P == nil {
		return errors.New("profile: node root: empty profile")
	}
	if node == "" {
		return errors.New("profile: node root: no node name")
	}
	var fid, lid uint64
	for _, f := range p.P.Function {
		fid = max(fid, f.ID)
	}
	for _, l := range p.P.Location {
		lid = max(lid, l.ID)
	}
	name := NodePrefix + node
	fn := &profile.Function{ID: fid + 1, Name: name, SystemName: name}
	loc := &profile.Location{ID: lid + 1, Line: []profile.Line{{Function: fn}}}
	p.P.Function = append(p.P.Function, fn)
	p.P.Location = append(p.P.Location, loc)
	for _, s := range p.P.Sample {
		s.Location = append(s.Location, loc)
		if s.Label == nil {
			s.Label = map[string][]string{}
		}
		s.Label[NodeLabel] = []string{node}
	}
	return nil
}

// isNodeRoot reports whether a location is a node root frame
// (AddNodeRoot).
func isNodeRoot(l *profile.Location) bool {
	return l.Mapping == nil && strings.HasPrefix(locName(l), NodePrefix)
}
