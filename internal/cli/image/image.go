// Package image implements `cnibench image`: build the container image of
// cnibench that the Kubernetes backend runs, without docker.
package imagecmd

import (
	"fmt"
	"log/slog"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/image"
)

type flagpole struct {
	Binaries []string
	Ref      string
	Out      string
	Push     bool
	Insecure bool
}

// NewCommand returns the image command and its subcommands.
func NewCommand(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	c := &cobra.Command{
		Use:   "image",
		Short: "Build the cnibench container image (for the Kubernetes backend)",
		Long: "The image holds only a statically linked cnibench binary at /cnibench (its\n" +
			"entrypoint) and an empty /tmp. It is built without docker; the same binaries\n" +
			"always give the same image digest. See docs/images.md.",
		Args: cobra.NoArgs,
	}
	c.AddCommand(newBuild(logger, s))
	return c
}

func newBuild(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "build (--out FILE.tar | --push) [--binary [OS/ARCH=]PATH]...",
		Short: "Build the image and write it to a tarball or push it to a registry",
		Long: "Build the image of a statically linked cnibench binary (default: this one;\n" +
			"build it with CGO_ENABLED=0), or with several --binary, one per platform, a\n" +
			"multi-platform image (an OCI image index; each node runs its own platform's).\n" +
			"Write it to a tarball (--out; one platform: a docker-archive, several: an OCI\n" +
			"archive; load it on each node with 'ctr -n k8s.io images import --all-platforms\n" +
			"FILE.tar' or 'kind load image-archive FILE.tar') or push it to the registry\n" +
			"named by --ref (--push; credentials from the docker config, ~/.docker/config.json\n" +
			"or $DOCKER_CONFIG, and its credential helpers). The default reference,\n" +
			image.DefaultRepository + ":<version>, is never pulled: it exists only where it was imported.",
		Example: "  CGO_ENABLED=0 make build && bin/cnibench image build --out cnibench.tar\n" +
			"  cnibench image build --push --ref registry.example:5000/cnibench:dev\n" +
			"  make image-multiarch    # bin/cnibench-linux-{amd64,arm64} and one image of both\n" +
			"  cnibench image build --binary bin/cnibench-linux-amd64 \\\n" +
			"    --binary linux/arm64=bin/cnibench-linux-arm64 --push --ref registry.example/team/cnibench:v1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, flags)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&flags.Binaries, "binary", nil, "cnibench binary to put in the image, PATH or OS/ARCH[/VARIANT]=PATH (platform from its ELF header if not given); statically linked; repeat it, one per platform, for a multi-platform image (default: the running cnibench)")
	fl.StringVar(&flags.Ref, "ref", image.DefaultRef(), "image reference: the tag the tarball carries, or where --push uploads it")
	fl.StringVar(&flags.Out, "out", "", "write the image to this tarball: a docker-archive for one platform, an OCI archive for several (for 'ctr -n k8s.io images import --all-platforms' or 'kind load image-archive')")
	fl.BoolVar(&flags.Push, "push", false, "push the image (several platforms: the image index) to the registry of --ref")
	fl.BoolVar(&flags.Insecure, "insecure", false, "with --push: allow a plain-HTTP registry")
	return cmd
}

func runE(cmd *cobra.Command, _ *slog.Logger, s streams.IOStreams, flags *flagpole) error {
	ref, bins, err := flags.validate()
	if err != nil {
		return err
	}
	if len(bins) > 1 {
		return runIndex(cmd, s, flags, ref, bins)
	}
	var bin image.Binary
	if len(bins) == 1 {
		bin = bins[0]
	}
	img, err := image.Build(image.Options{Binary: bin.Path, Platform: bin.Platform, Ref: flags.Ref})
	if err != nil {
		if bin.Path != "" {
			return clierr.Usagef("--binary %s: %v", bin, err)
		}
		return fmt.Errorf("the running cnibench: %w; or pass --binary", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("digest of the image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("config of the image: %w", err)
	}
	plat := cf.Platform()
	if bin.Path == "" {
		bin.Path = "the running cnibench"
	}
	if _, err := fmt.Fprintf(s.Out, "%-12s %s  %s\n", plat.String(), digest, bin.Path); err != nil {
		return err
	}
	if flags.Out != "" {
		if err := image.WriteTarball(img, flags.Ref, flags.Out); err != nil {
			return fmt.Errorf("--out %s: %w", flags.Out, err)
		}
		_, err := fmt.Fprintf(s.Out, "wrote %s (%s) to %s\n", flags.Ref, digest, flags.Out)
		return err
	}
	pushed, err := image.Push(cmd.Context(), img, flags.Ref, image.PushOptions{Insecure: flags.Insecure})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Out, "pushed %s\n", pushedAt(ref, pushed))
	return err
}

// runIndex builds, writes or pushes the multi-platform image of bins.
func runIndex(cmd *cobra.Command, s streams.IOStreams, flags *flagpole, ref name.Reference, bins []image.Binary) error {
	idx, err := image.BuildIndex(bins, "")
	if err != nil {
		return clierr.Usagef("--binary %v", err)
	}
	for _, pi := range idx.Images {
		if _, err := fmt.Fprintf(s.Out, "%-12s %s  %s\n", pi.Platform.String(), pi.Digest, pi.Binary.Path); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.Out, "%-12s %s\n", "index", idx.Digest); err != nil {
		return err
	}
	if flags.Out != "" {
		if err := image.WriteOCIArchive(idx.Index, flags.Ref, flags.Out); err != nil {
			return fmt.Errorf("--out %s: %w", flags.Out, err)
		}
		_, err := fmt.Fprintf(s.Out, "wrote %s (%s, OCI archive of %d platforms) to %s\n", flags.Ref, idx.Digest, len(idx.Images), flags.Out)
		return err
	}
	pushed, err := image.PushIndex(cmd.Context(), idx.Index, flags.Ref, image.PushOptions{Insecure: flags.Insecure})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Out, "pushed %s\n", pushedAt(ref, pushed))
	return err
}

// pushedAt is ref with the pushed digest: REPO:TAG@sha256:... for a tag.
func pushedAt(ref name.Reference, pushed name.Digest) string {
	if tag, ok := ref.(name.Tag); ok {
		return tag.String() + "@" + pushed.DigestStr()
	}
	return pushed.String()
}

// validate checks the flags, parses --ref and each --binary; bad values are
// usage errors.
func (f *flagpole) validate() (name.Reference, []image.Binary, error) {
	switch {
	case f.Out == "" && !f.Push:
		return nil, nil, clierr.Usagef("--out FILE.tar or --push: pass one (--out writes a tarball for 'ctr -n k8s.io images import', --push uploads to the registry of --ref)")
	case f.Out != "" && f.Push:
		return nil, nil, clierr.Usagef("--out and --push: pass only one (write the tarball, or push)")
	case f.Insecure && !f.Push:
		return nil, nil, clierr.Usagef("--insecure: only with --push (a tarball has no registry)")
	case f.Ref == "":
		return nil, nil, clierr.Usagef("--ref: must not be empty (default %s)", image.DefaultRef())
	}
	var opts []name.Option
	if f.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(f.Ref, opts...)
	if err != nil {
		return nil, nil, clierr.Usagef("--ref %q: %v; want REGISTRY/REPOSITORY:TAG, e.g. %s", f.Ref, err, image.DefaultRef())
	}
	if _, ok := ref.(name.Tag); !ok && f.Out != "" {
		return nil, nil, clierr.Usagef("--ref %s: a tarball needs a tag, not a digest, e.g. %s", f.Ref, image.DefaultRef())
	}
	bins := make([]image.Binary, 0, len(f.Binaries))
	for _, s := range f.Binaries {
		b, err := image.ParseBinary(s)
		if err != nil {
			return nil, nil, clierr.Usagef("--binary %v", err)
		}
		bins = append(bins, b)
	}
	return ref, bins, nil
}
