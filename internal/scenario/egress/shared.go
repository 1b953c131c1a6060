package egress

import (
	"context"

	"github.com/cnibench/cnibench/internal/lab"
)

// sharedAddrs are the server's two extra addresses in one lab (added at the
// first Prepare, removed by Close).
type sharedAddrs struct {
	topo   *lab.Topology
	remove []func(context.Context) error
}
