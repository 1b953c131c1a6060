// Package engine is cnibench's native workload engine, by what both of its
// ends agree on: the tests (netperf-style tcp_stream, tcp_rr, tcp_crr,
// udp_stream, udp_rr, http, tcp_rr_loaded, and icmp_echo answered by the
// kernel of the server's namespace), their configuration and limits
// (config.go: Config, Defaults, Validate), the control protocol (proto.go:
// length-prefixed JSON messages, the hello with its token and reservation,
// the server's stats of a window), and the bytes of the data connections
// (udp.go: the datagram header and phases; svcrr.go: service mode's
// authenticated preamble; payload.go: the marker every payload carries;
// icmp.go: the echo payload's sizes).
//
// The two ends are sub-packages: engine/server serves any number of
// sessions and tests at once within its limits; engine/client runs a test's
// repeats against it and returns a result.Result. Between them,
// engine/window computes every metric of a measured window from the
// readings both ends took at its edges (engine/hoststat reads the host's
// and the process's CPU there); engine/sock is the raw blocking sockets and
// flow threads both ends' data planes use, engine/httpmsg the http test's
// HTTP/1.1 parsing.
package engine
