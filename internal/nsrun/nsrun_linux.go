// Package nsrun runs code inside a network namespace without moving the
// caller's thread: each call uses a new goroutine whose OS thread is locked
// and switched, following cilium/ebpf's internal/testutils NetNS.Do. A
// thread that cannot be switched back stays locked, so the Go runtime
// discards it instead of handing it to other goroutines.
package nsrun

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Do runs f on a locked thread switched into ns. Sockets f creates belong to
// ns and can be used from any goroutine afterwards; f must not start
// goroutines that expect to be in ns.
func Do(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("get current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(ns), unix.CLONE_NEWNET); err != nil {
			// A failed setns leaves the thread where it was, but be safe.
			if rerr := unix.Setns(int(orig), unix.CLONE_NEWNET); rerr == nil {
				runtime.UnlockOSThread()
			}
			errc <- fmt.Errorf("enter netns: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(orig), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: the runtime terminates it when this
			// goroutine exits.
			errc <- errors.Join(ferr, fmt.Errorf("restore original netns: %w (terminating OS thread)", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Scratch runs f on a locked thread moved into a new, anonymous network
// namespace. The thread is never unlocked: it dies with its goroutine and the
// namespace disappears with it, whatever f created there.
func Scratch(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Deliberately no UnlockOSThread.
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare a scratch netns: %w", err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// NewScratch returns a handle to a new, anonymous network namespace (it
// lives as long as the handle is open) without moving the caller's thread.
func NewScratch() (netns.NsHandle, error) { return create(netns.New) }

// NewNamed creates a named network namespace (bind-mounted under
// /run/netns, as `ip netns add` does) without moving the caller's thread.
// /run/netns is made a shared mount point first, as iproute2 does, so that a
// later `ip netns add` cannot hide the namespace (see ensureRunDir).
func NewNamed(name string) (netns.NsHandle, error) {
	if err := ensureRunDir(RunDir); err != nil {
		return netns.None(), err
	}
	return create(func() (netns.NsHandle, error) { return netns.NewNamed(name) })
}

// create runs newNS, which switches the calling thread into a new
// namespace, on a locked thread that is switched back afterwards.
func create(newNS func() (netns.NsHandle, error)) (netns.NsHandle, error) {
	type result struct {
		h   netns.NsHandle
		err error
	}
	resc := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			resc <- result{err: fmt.Errorf("get current netns: %w", err)}
			return
		}
		defer orig.Close()
		h, err := newNS() // switches this thread into the new namespace
		if err != nil {
			// The thread stays locked: it may or may not have switched.
			resc <- result{err: fmt.Errorf("create a netns: %w", err)}
			return
		}
		if err := netns.Set(orig); err != nil {
			h.Close()
			resc <- result{err: fmt.Errorf("restore original netns: %w (terminating OS thread)", err)}
			return
		}
		runtime.UnlockOSThread()
		resc <- result{h: h}
	}()
	res := <-resc
	return res.h, res.err
}
