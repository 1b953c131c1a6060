// Package server is the workload engine's server (`cnibench serve`):
// Server.Serve accepts control sessions (server.go), admits each within
// Limits (budget.go: sessions, a global flow and buffer budget reserved at
// the hello, idle timeouts; auth.go: the shared token), and sets up one data
// plane per test: TCP workers on blocking sockets (tcpserver_linux.go), UDP
// sockets with per-flow steering and exact receive accounting
// (udpserver_linux.go, seq.go), net/http with a fixed body (httpserver.go),
// none for icmp_echo. It reads its edges of each measured window (window.go)
// and answers the stats engine/window computes from them. Service mode
// serves without sessions: ServeService (tcp_rr, tcp_crr, tcp_stream behind
// a preamble) and ServeHTTPBody. Its end-to-end tests run engine/client
// against it over loopback, hostile peers included (hostile_test.go).
package server
