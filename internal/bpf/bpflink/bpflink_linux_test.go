package bpflink_test

import (
	"errors"
	"net"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/cnibench/cnibench/internal/bpf/bpflink"
	"github.com/cnibench/cnibench/internal/nsrun"
	"github.com/cnibench/cnibench/internal/testutil"
)

// TestCloseDetachesWhileAnotherHoldsTheLink: with a second reference to
// the link's file (what a child forked between fork and exec holds), a
// plain Close leaves the program attached and bpflink.Close does not.
func TestCloseDetachesWhileAnotherHoldsTheLink(t *testing.T) {
	testutil.SkipUnlessRoot(t)
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skip(err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.SchedCLS,
		License:      "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, -1), asm.Return()}, // TCX_NEXT
	})
	if err != nil {
		t.Skipf("load a tc program: %v", err)
	}
	defer prog.Close()
	for _, tc := range []struct {
		name     string
		close    func(link.Link) error
		attached int
	}{
		{"Close", func(l link.Link) error { return l.Close() }, 1},
		{"bpflink.Close", bpflink.Close, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := nsrun.Scratch(func() error {
				lo, err := net.InterfaceByName("lo")
				if err != nil {
					return err
				}
				l, err := link.AttachTCX(link.TCXOptions{Interface: lo.Index, Program: prog, Attach: ebpf.AttachTCXIngress})
				if err != nil {
					if errors.Is(err, ebpf.ErrNotSupported) {
						t.Skip(err)
					}
					return err
				}
				held, err := unix.Dup(l.(interface{ FD() int }).FD())
				if err != nil {
					return errors.Join(err, l.Close())
				}
				defer unix.Close(held)
				if err := tc.close(l); err != nil {
					return err
				}
				q, err := link.QueryPrograms(link.QueryOptions{Target: lo.Index, Attach: ebpf.AttachTCXIngress})
				if err != nil {
					return err
				}
				if n := len(q.Programs); n != tc.attached {
					t.Errorf("programs attached after %s with the link's file held elsewhere: %d, want %d", tc.name, n, tc.attached)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
