package ipsec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// pluginPackage names the Debian (bookworm) package that ships a plugin.
func pluginPackage(plugin string) string {
	switch plugin {
	case "kernel-libipsec":
		return "libcharon-extra-plugins"
	case "openssl", "gcm", "aesni":
		return "libstrongswan-standard-plugins"
	case "vici":
		return "strongswan-swanctl"
	case "socket-default":
		return "strongswan-libcharon"
	}
	return "libstrongswan"
}

// ProbeUserspace tells whether StartUserspace can run here: charon,
// swanctl, the charon plugins it needs and /dev/net/tun. It returns an
// error wrapping ErrNotSupported naming what is missing and the Debian
// packages that provide it.
func ProbeUserspace() error {
	return probeUserspace(func(path string) bool { _, err := os.Stat(path); return err == nil },
		func() bool { _, err := swanctl(); return err == nil })
}

// probeUserspace is ProbeUserspace with the file and swanctl checks
// passed in (for tests).
func probeUserspace(exists func(path string) bool, haveSwanctl func() bool) error {
	var missing []string
	pkgs := map[string]bool{}
	need := func(path, what, pkg string) {
		if !exists(path) {
			missing = append(missing, fmt.Sprintf("%s (%s, package %s)", what, path, pkg))
			pkgs[pkg] = true
		}
	}
	need(charonPath, "charon", "strongswan-charon")
	if !haveSwanctl() {
		missing = append(missing, "swanctl (package strongswan-swanctl)")
		pkgs["strongswan-swanctl"] = true
	}
	for _, name := range strings.Fields(requiredPlugins) {
		need(filepath.Join(pluginDir, "libstrongswan-"+name+".so"), "charon plugin "+name, pluginPackage(name))
	}
	if !exists(tunDevice) {
		missing = append(missing, fmt.Sprintf("%s (kernel CONFIG_TUN)", tunDevice))
	}
	if len(missing) == 0 {
		return nil
	}
	var install []string
	for _, p := range []string{"strongswan-charon", "strongswan-swanctl", "libcharon-extra-plugins", "libstrongswan-standard-plugins", "strongswan-libcharon", "libstrongswan"} {
		if pkgs[p] {
			install = append(install, p)
		}
	}
	msg := "userspace ESP (strongSwan kernel-libipsec) needs " + strings.Join(missing, ", ")
	if len(install) > 0 {
		msg += "; apt-get install " + strings.Join(install, " ")
	}
	return fmt.Errorf("%w: %s", ErrNotSupported, msg)
}

// swanctl returns the path of swanctl.
func swanctl() (string, error) {
	if p, err := exec.LookPath("swanctl"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(swanctlPath); err != nil {
		return "", fmt.Errorf("swanctl not on PATH nor at %s: %w", swanctlPath, err)
	}
	return swanctlPath, nil
}
