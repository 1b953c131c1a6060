package lab

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// NetnsDir is where named network namespaces are bind-mounted (as by
// `ip netns add`), so `ip netns list` sees them.
const NetnsDir = "/run/netns"

// Prefix starts the name of every namespace the lab creates.
const Prefix = "cnb-"

// Roles of the namespaces in a datapath's topology.
const (
	RoleNode1   = "node1"   // first node; hosts client1
	RoleNode2   = "node2"   // second node; hosts client2 and server
	RoleClient1 = "client1" // client pod on node1 (cross-node client)
	RoleClient2 = "client2" // client pod on node2 (same-node client)
	RoleServer  = "server"  // server pod on node2
)

// maxRunIDLen bounds run ids so that namespace names stay readable.
const maxRunIDLen = 16

// NewRunID returns a short random run id (6 hex digits).
func NewRunID() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidateRunID checks that id can be used in namespace names: 1 to 16
// lowercase letters or digits (no '-', which separates the name's parts).
func ValidateRunID(id string) error {
	if id == "" || len(id) > maxRunIDLen {
		return fmt.Errorf("run id %q: must be 1 to %d characters", id, maxRunIDLen)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return fmt.Errorf("run id %q: only lowercase letters and digits are allowed", id)
		}
	}
	return nil
}

// NSName returns the namespace name for a role of a datapath in a run:
// cnb-<runid>-<datapath>-<role>.
func NSName(runID, datapath, role string) string {
	return Prefix + runID + "-" + datapath + "-" + role
}

// ParsedName is a lab namespace name split into its parts.
type ParsedName struct {
	RunID    string
	Datapath string // empty if the name has no datapath part
	Role     string
}

// ParseNSName splits a namespace name made by NSName. ok is false for names
// that do not start with Prefix or have no run id.
func ParseNSName(name string) (p ParsedName, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found {
		return ParsedName{}, false
	}
	runID, rest, _ := strings.Cut(rest, "-")
	if ValidateRunID(runID) != nil {
		return ParsedName{}, false
	}
	p.RunID = runID
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		p.Datapath, p.Role = rest[:i], rest[i+1:]
	} else {
		p.Role = rest
	}
	return p, true
}
