package labcmd

import (
	"fmt"
	"os"
)

// errNeedsRoot is the one line every lab command (and `cnibench suite`)
// prints when it lacks the privileges it needs, before it tries anything.
func errNeedsRoot(sub string) error {
	return fmt.Errorf("the lab needs root (network namespaces, netfilter, BPF): run as root, e.g. sudo cnibench lab %s", sub)
}

// privileges says whether this process may build, inspect and remove labs.
type privileges struct {
	geteuid func() int
}

func hostPrivileges() privileges { return privileges{geteuid: os.Geteuid} }

// check returns errNeedsRoot(sub) unless the process runs as root. The lab
// needs CAP_SYS_ADMIN (namespaces, mounts in /run/netns), CAP_NET_ADMIN and
// CAP_BPF, and reads other processes' state to tell a leaked lab from one in
// use: short of root, no lab command can do or know what it says.
func (p privileges) check(sub string) error {
	if p.geteuid() != 0 {
		return errNeedsRoot(sub)
	}
	return nil
}
