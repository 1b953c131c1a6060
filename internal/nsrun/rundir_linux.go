package nsrun

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// RunDir is where named network namespaces are bind-mounted (iproute2's
// NETNS_RUN_DIR).
const RunDir = "/run/netns"

// ensureRunDir makes dir a shared mount point of its own before a named
// namespace is mounted in it, as `ip netns add` does. Without it, the first
// `ip netns add` on the machine after a lab mounted its namespaces would
// bind-mount dir over itself (recursively: the namespaces show through) and
// leave the lab's original mounts hidden underneath, where nothing can
// unmount them: the namespaces then outlive `cnibench lab down` ("device or
// resource busy"). When dir is not a mount point but already holds entries
// (namespaces mounted by another tool), turning it into one would hide
// those in the same way, so it is left alone.
func ensureRunDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("make %s a shared mount: %w", dir, err)
	}
	// EINVAL: dir is not a mount point.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	if len(ents) > 0 {
		return nil
	}
	if err := unix.Mount(dir, dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mount %s on itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s a shared mount: %w", dir, err)
	}
	return nil
}
