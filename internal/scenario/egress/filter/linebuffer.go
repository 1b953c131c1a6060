package filter

import "github.com/cnibench/cnibench/internal/nf"

// lineBuffer is the egress loaders' name for nf.LineBuffer.
type lineBuffer = nf.LineBuffer
