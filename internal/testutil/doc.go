// Package testutil holds helpers shared by cnibench's tests: skipping
// privileged or unsupported tests, and tiny TCP/UDP echo endpoints that run
// inside a network namespace.
package testutil
