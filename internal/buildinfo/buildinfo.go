// Package buildinfo reports the version and commit of this cnibench build.
package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/cnibench/cnibench/pkg/result"
)

// Version and Commit are set at link time (-ldflags "-X ...") by the Makefile;
// without them the VCS information embedded by the Go toolchain is used.
var (
	Version = "0.1.0-dev"
	Commit  = ""
)

// Tool describes this build for result documents.
func Tool() result.Tool {
	t := result.Tool{Name: "cnibench", Version: Version, Commit: Commit, Go: runtime.Version()}
	if t.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					t.Commit = s.Value
				}
				if s.Key == "vcs.modified" && s.Value == "true" && t.Commit != "" {
					t.Commit += "-dirty"
				}
			}
		}
	}
	return t
}
