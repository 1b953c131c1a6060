//go:build !linux

package engine

// startHTTPEpoll: no epoll here; the goroutine client runs.
func (w *workload) startHTTPEpoll(addrs []string, req []byte) bool { return false }
