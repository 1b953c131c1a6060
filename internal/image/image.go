// Package image builds container images of the cnibench binary without
// docker: one layer with the (static) binary at /cnibench and an empty /tmp,
// written as a docker-archive tarball (for `ctr -n k8s.io images import`) or
// pushed to a registry. Several binaries, one per platform, make an OCI image
// index (BuildIndex), written as an OCI archive (WriteOCIArchive) or pushed
// (PushIndex). The same binaries always give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cnibench/cnibench/internal/buildinfo"
)

const (
	// BinaryPath is where the image holds the cnibench binary; it is the
	// image's entrypoint.
	BinaryPath = "/cnibench"
	// DefaultRepository is the repository of DefaultRef. The .local domain
	// is never resolved: images under it exist only where they were
	// imported (ctr -n k8s.io images import) and are never pulled.
	DefaultRepository = "cnibench.local/cnibench"
	// LabelTitle and LabelVersion are the OCI annotation keys set as labels.
	LabelTitle   = "org.opencontainers.image.title"
	LabelVersion = "org.opencontainers.image.version"
	// LabelRevision is set when the build knows its commit.
	LabelRevision = "org.opencontainers.image.revision"

	maxTagLen = 128
)

// Epoch is the fixed time of the layer's files, the layer's history entry and
// the image's creation, so that the same binary gives the same digest.
var Epoch = time.Unix(0, 0).UTC()

// Options says what Build puts in the image.
type Options struct {
	// Binary is the path of the cnibench binary; default os.Executable().
	// It must be a statically linked ELF executable.
	Binary string
	// Ref is the image reference, e.g. cnibench.local/cnibench:0.1.0;
	// default DefaultRef(). Build does not use it; it is here for callers
	// that carry one Options value to WriteTarball or Push.
	Ref string
	// Platform is GOOS/GOARCH[/variant] of the binary, e.g. linux/amd64.
	// Default: linux and the architecture of the binary's ELF header (for a
	// native build that is runtime.GOOS/runtime.GOARCH), falling back to
	// runtime.GOARCH for a machine this package does not know. A Platform
	// whose architecture contradicts the ELF header is refused.
	Platform string
	// Version is the org.opencontainers.image.version label; default
	// buildinfo.Version (the version of the running cnibench, which is the
	// binary's own version when Binary is left at its default).
	Version string
}

// DefaultRef returns the default image reference,
// cnibench.local/cnibench:<version>[-<commit>], where <version> is
// buildinfo.Version and <commit> the build's commit when known, made a
// valid tag by SanitizeTag (e.g. cnibench.local/cnibench:0.1.0-cb21a58, or
// :0.1.0-dev for a build without the Makefile's -ldflags or VCS stamp).
func DefaultRef() string {
	// The commit in the tag: builds of different commits (same version
	// number) must not share a tag that a node with IfNotPresent would
	// never pull again.
	v := buildinfo.Version
	if c := buildinfo.Tool().Commit; c != "" {
		v += "-" + c
	}
	return DefaultRepository + ":" + SanitizeTag(v)
}

// SanitizeTag makes s a valid image tag: every character (rune) outside
// [A-Za-z0-9_.-] becomes '-', leading '.' and '-' are dropped (a tag must
// start with a letter, digit or '_'), and the result is cut to 128
// characters. An empty result becomes "dev".
func SanitizeTag(s string) string {
	t := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' {
			return c
		}
		return '-'
	}, s)
	t = strings.TrimLeft(t, ".-")
	if len(t) > maxTagLen {
		t = t[:maxTagLen]
	}
	if t == "" {
		return "dev"
	}
	return t
}

// Build returns the image of opts.Binary: from empty.Image, one layer with
// the binary at /cnibench (mode 0755, owner 0:0) and an empty /tmp (mode
// 1777), both dated Epoch, and a config with entrypoint /cnibench, PATH=/,
// working directory /, the title and version labels and the platform.
// Media types are Docker schema 2 (those of empty.Image and tarball layers),
// which every registry and containerd accept and a docker-archive round trip
// keeps. The binary is read once, into memory.
func Build(opts Options) (v1.Image, error) {
	bin, plat, err := resolve(opts.Binary, opts.Platform)
	if err != nil {
		return nil, err
	}
	return buildImage(bin, plat, opts.Version, false)
}

// resolve returns the binary's path (default: the running cnibench) and its
// platform, checking that it is a static ELF executable of that platform.
func resolve(bin, platformStr string) (string, v1.Platform, error) {
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", v1.Platform{}, fmt.Errorf("finding the running cnibench binary: %w (pass its path)", err)
		}
		bin = exe
	}
	arch, err := checkStatic(bin)
	if err != nil {
		return "", v1.Platform{}, err
	}
	plat, err := platform(platformStr, arch, bin)
	if err != nil {
		return "", v1.Platform{}, err
	}
	return bin, plat, nil
}

// buildImage builds the image of the binary at bin for plat (see Build).
// With oci, the manifest, config and layer have OCI media types (for an OCI
// image index); otherwise Docker schema 2 ones.
func buildImage(bin string, plat v1.Platform, version string, oci bool) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	tarBytes, err := layerTar(data)
	if err != nil {
		return nil, err
	}
	lopts := []tarball.LayerOption{tarball.WithCompressedCaching}
	if oci {
		lopts = append(lopts, tarball.WithMediaType(types.OCILayer))
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, lopts...)
	if err != nil {
		return nil, fmt.Errorf("making the image layer: %w", err)
	}
	base := empty.Image
	if oci {
		base = mutate.MediaType(mutate.ConfigMediaType(base, types.OCIConfigJSON), types.OCIManifestSchema1)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: Epoch},
			CreatedBy: "cnibench image build",
			Comment:   "the cnibench binary at " + BinaryPath + " and an empty /tmp",
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	labels := map[string]string{LabelTitle: "cnibench", LabelVersion: version}
	if version == "" {
		labels[LabelVersion] = buildinfo.Version
		if c := buildinfo.Tool().Commit; c != "" {
			labels[LabelRevision] = c
		}
	}
	cf.Created = v1.Time{Time: Epoch}
	cf.OS = plat.OS
	cf.Architecture = plat.Architecture
	cf.Variant = plat.Variant
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.Cmd = nil
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = labels
	return mutate.ConfigFile(img, cf)
}

// layerTar returns the uncompressed layer: /cnibench holding data and /tmp.
func layerTar(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdrs := []*tar.Header{
		{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(BinaryPath, "/"), Mode: 0o755, Size: int64(len(data))},
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777},
	}
	for _, h := range hdrs {
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "root", "root"
		h.ModTime = Epoch
		h.Format = tar.FormatUSTAR
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic returns the GOARCH of the ELF executable at path ("" for a
// machine it does not know), or an error if path is not a statically linked
// ELF executable: an empty image has no dynamic loader or C library.
func checkStatic(path string) (string, error) {
	r, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := elf.NewFile(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("too short")
		}
		return "", fmt.Errorf("%s: not an ELF executable (%v): the image runs a statically linked Linux binary; build it with CGO_ENABLED=0 GOOS=linux", path, err)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return "", fmt.Errorf("%s: ELF %s, not an executable: build cnibench with CGO_ENABLED=0 GOOS=linux", path, f.Type)
	}
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		dynamic = true
	}
	if dynamic {
		return "", fmt.Errorf("%s is dynamically linked and cannot run in an empty image: build it with CGO_ENABLED=0 (e.g. CGO_ENABLED=0 make build)", path)
	}
	return elfArch(f), nil
}

// elfArch maps an ELF header to a GOARCH; "" if unknown.
func elfArch(f *elf.File) string {
	le := f.ByteOrder.String() == "LittleEndian"
	is64 := f.Class == elf.ELFCLASS64
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_386:
		return "386"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_ARM:
		return "arm"
	case elf.EM_RISCV:
		if is64 {
			return "riscv64"
		}
	case elf.EM_PPC64:
		if le {
			return "ppc64le"
		}
		return "ppc64"
	case elf.EM_S390:
		if is64 {
			return "s390x"
		}
	case elf.EM_LOONGARCH:
		if is64 {
			return "loong64"
		}
	case elf.EM_MIPS:
		switch {
		case is64 && le:
			return "mips64le"
		case is64:
			return "mips64"
		case le:
			return "mipsle"
		default:
			return "mips"
		}
	}
	return ""
}

// platform resolves Options.Platform against the binary's architecture.
func platform(s, elfArch, bin string) (v1.Platform, error) {
	if s == "" {
		arch := elfArch
		if arch == "" {
			arch = runtime.GOARCH
		}
		return v1.Platform{OS: "linux", Architecture: arch}, nil
	}
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" || strings.Count(s, "/") > 2 {
		return v1.Platform{}, fmt.Errorf("platform %q: want GOOS/GOARCH[/variant], e.g. linux/amd64", s)
	}
	if elfArch != "" && p.Architecture != elfArch {
		return v1.Platform{}, fmt.Errorf("platform %q: %s is built for GOARCH=%s; declare %s/%s or rebuild it with GOARCH=%s", s, bin, elfArch, p.OS, elfArch, p.Architecture)
	}
	return v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}, nil
}

// WriteTarball writes img, tagged ref, to path as a docker-archive tarball
// (docker save's format, which `ctr -n k8s.io images import` and
// `docker load` read). ref must be a tag, the name the importer gives the
// image. The file is written to a temporary file beside path and renamed
// over it when complete, so path never holds a partial image.
func WriteTarball(img v1.Image, ref string, path string) (err error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if _, ok := r.(name.Tag); !ok {
		return fmt.Errorf("image reference %q: a tarball needs a tag (e.g. %s), not a digest", ref, DefaultRef())
	}
	return writeFile(path, func(w io.Writer) error { return tarball.Write(r, img, w) })
}

// writeFile writes path atomically: write fills a temporary file beside
// it (mode 0644), which is synced and renamed over path; on error nothing
// is left behind.
func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// PushOptions tune Push.
type PushOptions struct {
	// Insecure lets Push fall back to plain HTTP when the registry does
	// not answer HTTPS (name.Insecure); it does not skip verifying TLS
	// certificates. Registries on localhost, loopback and private (RFC
	// 1918) addresses get the fallback without it.
	Insecure bool
	// Timeout bounds the whole upload; default DefaultPushTimeout.
	Timeout time.Duration
}

// DefaultPushTimeout bounds a push when PushOptions.Timeout is zero: a
// binary of tens of megabytes per platform over a slow uplink.
const DefaultPushTimeout = 10 * time.Minute

// writeOptions returns the remote options of a push bounded by opts.Timeout,
// and the cancel function of its context.
func (o PushOptions) writeOptions(ctx context.Context) ([]remote.Option, context.CancelFunc) {
	t := o.Timeout
	if t <= 0 {
		t = DefaultPushTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithUserAgent("cnibench/" + buildinfo.Version),
	}, cancel
}

// parseRef parses ref for a push (name.Insecure when opts.Insecure).
func (o PushOptions) parseRef(ref string) (name.Reference, error) {
	var nopts []name.Option
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	r, err := name.ParseReference(ref, nopts...)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return r, nil
}

// Push uploads img to the registry as ref, with the credentials of the
// docker config (authn.DefaultKeychain: ~/.docker/config.json or
// $DOCKER_CONFIG, and credential helpers such as docker-credential-ecr-login
// or docker-credential-gcloud named by its credHelpers or credsStore),
// bounded by opts.Timeout, and returns the pushed image's
// digest reference (repository@sha256:...).
func Push(ctx context.Context, img v1.Image, ref string, opts PushOptions) (name.Digest, error) {
	r, err := opts.parseRef(ref)
	if err != nil {
		return name.Digest{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	ropts, cancel := opts.writeOptions(ctx)
	defer cancel()
	if err := remote.Write(r, img, ropts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return r.Context().Digest(d.String()), nil
}
