package image

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Binary is one binary of a multi-platform image (one --binary flag): the
// path of a static cnibench binary and, optionally, its declared platform.
type Binary struct {
	// Path is the binary's path; "" is the running cnibench.
	Path string
	// Platform is GOOS/GOARCH[/variant]; "" takes linux and the
	// architecture of the binary's ELF header. A declared platform whose
	// architecture differs from the ELF header is refused.
	Platform string
}

// String returns b as ParseBinary reads it: PATH or PLATFORM=PATH.
func (b Binary) String() string {
	if b.Platform == "" {
		return b.Path
	}
	return b.Platform + "=" + b.Path
}

// platformPrefix is what ParseBinary takes for a platform before '='.
var platformPrefix = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9]+(/[a-z0-9]+)?$`)

// ParseBinary parses a --binary value: PATH (the platform comes from the
// ELF header) or OS/ARCH[/VARIANT]=PATH, e.g. linux/arm64=bin/cnibench-arm64.
// A value is PLATFORM=PATH only when the text before its first '=' looks like
// a platform (lower-case letters and digits, two or three parts); a path that
// itself looks like that can be written ./linux/arm64=x.
func ParseBinary(s string) (Binary, error) {
	if s == "" {
		return Binary{}, fmt.Errorf("empty: want PATH or OS/ARCH=PATH, e.g. linux/arm64=bin/cnibench-linux-arm64")
	}
	if p, path, ok := strings.Cut(s, "="); ok && platformPrefix.MatchString(p) {
		if path == "" {
			return Binary{}, fmt.Errorf("%q: no path after '=': want OS/ARCH=PATH, e.g. %s=bin/cnibench-linux-%s", s, p, strings.Split(p, "/")[1])
		}
		return Binary{Path: path, Platform: p}, nil
	}
	return Binary{Path: s}, nil
}

// PlatformImage is the image of one platform of an Index.
type PlatformImage struct {
	// Platform is the image's platform, as the index's descriptor has it.
	Platform v1.Platform
	// Binary is the binary it holds, as given.
	Binary Binary
	// Image is the image, as Build makes it but with OCI media types.
	Image v1.Image
	// Digest is the image's manifest digest.
	Digest v1.Hash
}

// Index is a multi-platform image: an OCI image index with one image per
// platform.
type Index struct {
	// Index is the OCI image index (application/vnd.oci.image.index.v1+json).
	Index v1.ImageIndex
	// Digest is the index's digest, what a multi-platform reference
	// resolves to.
	Digest v1.Hash
	// Images are the platforms' images, sorted by platform.
	Images []PlatformImage
}

// BuildIndex builds the image of each binary (the image Build makes, with
// OCI media types) and an OCI image index of them (mutate.AppendManifests on
// empty.Index, each descriptor with its platform). The manifests are sorted
// by platform, so the same binaries, in any order, give the same index
// digest. version is the org.opencontainers.image.version label (default
// buildinfo.Version). It refuses no binaries, two binaries of one platform,
// a binary whose ELF architecture differs from its declared platform and one
// whose architecture it cannot tell; each error is one line that starts with
// the binary as given (Binary.String).
func BuildIndex(bins []Binary, version string) (*Index, error) {
	if len(bins) == 0 {
		return nil, fmt.Errorf("no binaries: pass one per platform")
	}
	type resolved struct {
		bin  Binary
		path string
		plat v1.Platform
	}
	var rs []resolved
	seen := map[string]Binary{}
	for _, b := range bins {
		path, plat, err := resolve(b.Path, b.Platform)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		if b.Platform == "" {
			if arch, _ := checkStatic(path); arch == "" {
				return nil, fmt.Errorf("%s: its ELF header names no architecture this program knows; declare it, e.g. linux/ARCH=%s", b, b.Path)
			}
		}
		key := platformKey(plat)
		if prev, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s: platform %s again (already %s): pass one binary per platform", b, plat.String(), prev)
		}
		seen[key] = b
		rs = append(rs, resolved{b, path, plat})
	}
	sort.Slice(rs, func(i, j int) bool { return platformKey(rs[i].plat) < platformKey(rs[j].plat) })

	idx := &Index{}
	adds := make([]mutate.IndexAddendum, 0, len(rs))
	for _, r := range rs {
		img, err := buildImage(r.path, r.plat, version, true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.bin, err)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("%s: digest of its image: %w", r.bin, err)
		}
		plat := r.plat
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
		idx.Images = append(idx.Images, PlatformImage{Platform: r.plat, Binary: r.bin, Image: img, Digest: d})
	}
	idx.Index = mutate.AppendManifests(empty.Index, adds...)
	d, err := idx.Index.Digest()
	if err != nil {
		return nil, fmt.Errorf("digest of the image index: %w", err)
	}
	idx.Digest = d
	return idx, nil
}

// platformKey is the platform as a string in which linux/arm64 and
// linux/arm64/v8 are one (as containerd normalizes them).
func platformKey(p v1.Platform) string {
	v := p.Variant
	if p.Architecture == "arm64" && v == "v8" {
		v = ""
	}
	return p.OS + "/" + p.Architecture + "/" + v
}

// PushIndex uploads idx and its images to the registry as ref
// (remote.WriteIndex), with the credentials and bound of Push, and returns
// the index's digest reference (repository@sha256:...). A node pulling
// ref gets the image of its own platform.
func PushIndex(ctx context.Context, idx v1.ImageIndex, ref string, opts PushOptions) (name.Digest, error) {
	r, err := opts.parseRef(ref)
	if err != nil {
		return name.Digest{}, err
	}
	d, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	ropts, cancel := opts.writeOptions(ctx)
	defer cancel()
	if err := remote.WriteIndex(r, idx, ropts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return r.Context().Digest(d.String()), nil
}
