//go:build !linux

package client

// startHTTPEpoll: no epoll here; the goroutine client runs.
func (w *workload) startHTTPEpoll(addrs []string, req []byte) bool { return false }
