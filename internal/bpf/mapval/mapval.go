// Package mapval holds what cnibench's BPF loaders share about map values:
// addresses and ports as BPF programs see them, and per-CPU counters.
package mapval

import (
	"encoding/binary"
	"net/netip"
)

// Addr4 is a's bytes as the u32 a BPF program reads from a packet or a
// sock_addr context (network order in memory).
func Addr4(a netip.Addr) uint32 {
	b := a.As4()
	return binary.NativeEndian.Uint32(b[:])
}

// Port is port in network order as the u16 a BPF program reads.
func Port(port uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], port)
	return binary.NativeEndian.Uint16(b[:])
}
