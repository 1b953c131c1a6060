// Package capture proves on the wire whether pod traffic between lab
// nodes is encrypted: it captures the frames of a node's wire interface
// (AF_PACKET inside the node's network namespace) and counts those that
// carry the engine's payload marker in clear (engine.PayloadMarker), by
// protocol (Result.ByProto). Result.Verdict turns a capture into the proof
// and its negative control; README.md says what it proves and what not.
package capture
