// Package window computes every metric of one measured window, by pure
// functions, from what both ends read at its two edges: Metrics turns the
// client's edges (ClientEdge: flow counters, TCP_INFO, its process's, cgroup's
// and host's CPU, IP fragmentation) and the server's stats into a repeat's
// metrics and warnings (window.go; per test: window_icmp.go, tcpinfo.go,
// load.go; the run's own CPU taken out of the hosts': foreign.go), and
// SrvStatsOver turns the server's two edges into the stats it sends
// (server.go). Nothing here reads a clock or a socket.
package window
