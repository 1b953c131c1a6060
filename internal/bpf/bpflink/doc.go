// Package bpflink ends a BPF link at once.
//
// Closing a link's file descriptor detaches its program only when the
// last reference to the link's file goes. Any child the process forks
// holds a copy of every descriptor until it execs (os/exec forks on every
// command, from any goroutine), so a program "detached" by Close alone can
// still meet the next packets. A benchmark that detaches a filter and
// then measures, or a test that detaches and then sends one datagram,
// would see the program it removed. Close detaches first
// (BPF_LINK_DETACH), which takes effect whatever holds the file.
package bpflink
