package main

import "syscall"

// groupAttr starts a child in its own process group (stopped as a group by
// killGroup); with parentDeath the kernel also SIGKILLs it if the harness
// dies without cleaning up.
func groupAttr(parentDeath bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if parentDeath {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// killGroup sends sig to the process group pgid.
func killGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }

// kernelRelease is uname's release ("" when it fails).
func kernelRelease() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	return cstr(u.Release[:])
}

func cstr(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
