package image

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cnibench/cnibench/internal/buildinfo"
)

// DefaultInspectTimeout bounds Platforms when its timeout is zero: a
// manifest or two and a config, small documents.
const DefaultInspectTimeout = 10 * time.Second

// ErrNotInRegistry is the error of Platforms for a reference that no
// registry serves (DefaultRepository's .local domain: imported on the
// nodes, never pulled).
var ErrNotInRegistry = errors.New("not in a registry")

// Platforms reads image reference ref's platforms from its registry, with
// the credentials Push uses (authn.DefaultKeychain), bounded by timeout
// (DefaultInspectTimeout if zero): an index's manifests' platforms (those
// without one, and attestation manifests' "unknown/unknown", are left
// out), or a single image's from its config. Registries on localhost,
// loopback and private addresses are reached over plain HTTP when they do
// not answer HTTPS, as Push does. An image under the .local domain
// (DefaultRef's) is ErrNotInRegistry at once.
func Platforms(ctx context.Context, ref string, timeout time.Duration) ([]v1.Platform, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if reg := r.Context().RegistryStr(); reg == "local" || strings.HasSuffix(reg, ".local") {
		return nil, fmt.Errorf("%s: %w (the .local domain is never resolved: such an image is imported on the nodes)", ref, ErrNotInRegistry)
	}
	if timeout <= 0 {
		timeout = DefaultInspectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("cnibench/" + buildinfo.Version),
	}
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s from its registry: %w", ref, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading %s's index: %w", ref, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading %s's index: %w", ref, err)
		}
		var out []v1.Platform
		for _, m := range im.Manifests {
			if p := m.Platform; p != nil && p.OS != "unknown" && p.Architecture != "unknown" && p.Architecture != "" &&
				!slices.ContainsFunc(out, func(q v1.Platform) bool { return q.Equals(*p) }) {
				out = append(out, *p)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: its index names no platform", ref)
		}
		return out, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading %s's config: %w", ref, err)
	}
	if cf.Architecture == "" {
		return nil, fmt.Errorf("%s: its config names no architecture", ref)
	}
	return []v1.Platform{{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}}, nil
}

// LinuxArches are the architectures of platforms' linux ones (as a node's
// kubernetes.io/arch label names them: GOARCH), each once, in order.
func LinuxArches(platforms []v1.Platform) []string {
	var out []string
	for _, p := range platforms {
		if (p.OS == "linux" || p.OS == "") && !slices.Contains(out, p.Architecture) {
			out = append(out, p.Architecture)
		}
	}
	return out
}
