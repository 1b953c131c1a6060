package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"

	"github.com/cnibench/cnibench/internal/image"
)

// imageInspectTimeout bounds the read of the image's platforms (a
// variable: tests shorten it).
var imageInspectTimeout = image.DefaultInspectTimeout

// nodeArches settles, once per backend, the node architectures
// (kubernetes.io/arch) the run's pods may use: --node-arch when given;
// else the linux platforms of the image itself, read from its registry
// with the push's credentials, bounded; else, when the image cannot be
// read there (an image imported on the nodes, under .local; no registry
// access), this cnibench's own architecture, said in one warning that
// names --node-arch.
func (b *Backend) nodeArches(ctx context.Context, log *slog.Logger) {
	b.archOnce.Do(func() {
		if len(b.o.Placement.Arches) > 0 {
			log.Info("node architectures", "arches", strings.Join(b.o.Placement.Arches, ","), "from", "--node-arch")
			return
		}
		plats, err := image.Platforms(ctx, b.o.Image, imageInspectTimeout)
		arches := image.LinuxArches(plats)
		if err == nil && len(arches) > 0 {
			b.o.Placement.Arches = arches
			log.Info("node architectures", "arches", strings.Join(arches, ","), "from", "the image's platforms in its registry", "image", b.o.Image)
			return
		}
		if err == nil {
			err = fmt.Errorf("the image has no linux platform (%d platforms)", len(plats))
		}
		b.o.Placement.Arches = []string{runtime.GOARCH}
		log.Warn("node architectures: "+runtime.GOARCH+" only, this cnibench's (the image's platforms could not be read); pass --node-arch to choose (e.g. --node-arch amd64,arm64)",
			"image", b.o.Image, "why", firstLine(err.Error()))
	})
}
