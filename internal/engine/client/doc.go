// Package client is the workload engine's client: Client.Run opens a
// control session to a cnibench server (control.go, hello.go), runs cfg's
// test Repeat times, each a warm-up and a measured window whose edges it
// reads on both ends, and returns a result.Result whose metrics
// engine/window computes. The flows of a repeat are a workload (flows.go):
// TCP, UDP and ICMP flows each on a blocking socket on its own OS thread
// (clientflows_linux.go, icmp_linux.go), the http test's clients as epoll
// state machines (httpepoll_linux.go) or, with --rate, goroutines
// (httpclient.go); tcp_rr_loaded's load is a second session (loaded.go).
// Latency goes to sharded HdrHistograms (hist.go). Outside Linux only the
// http test runs (the `_other.go` files fail with engine.ErrNotSupported).
package client
