// Package image implements `cnibench image`: build the container image of
// cnibench that the Kubernetes backend runs, without docker.
package image

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
	Binary   string
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
			"entrypoint) and an empty /tmp. It is built without docker; the same binary\n" +
			"always gives the same image digest.",
		Args: cobra.NoArgs,
	}
	c.AddCommand(newBuild(logger, s))
	return c
}

func newBuild(logger *slog.Logger, s streams.IOStreams) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "build (--out FILE.tar | --push)",
		Short: "Build the image and write it to a tarball or push it to a registry",
		Long: "Build the image of a statically linked cnibench binary (default: this one;\n" +
			"build it with CGO_ENABLED=0) and either write it to a docker-archive tarball\n" +
			"(--out; load it on each node with 'ctr -n k8s.io images import FILE.tar') or\n" +
			"push it to the registry named by --ref (--push; credentials from the docker\n" +
			"config, ~/.docker/config.json). The default reference, " + image.DefaultRepository + ":<version>,\n" +
			"is never pulled: it exists only where it was imported.",
		Example: "  CGO_ENABLED=0 make build && bin/cnibench image build --out cnibench.tar\n" +
			"  cnibench image build --push --ref registry.example:5000/cnibench:dev",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runE(cmd, logger, s, flags)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&flags.Binary, "binary", "", "cnibench binary to put in the image; must be statically linked (default: the running cnibench)")
	fl.StringVar(&flags.Ref, "ref", image.DefaultRef(), "image reference: the tag the tarball carries, or where --push uploads it")
	fl.StringVar(&flags.Out, "out", "", "write the image to this docker-archive tarball (for 'ctr -n k8s.io images import')")
	fl.BoolVar(&flags.Push, "push", false, "push the image to the registry of --ref")
	fl.BoolVar(&flags.Insecure, "insecure", false, "with --push: allow a plain-HTTP registry")
	return cmd
}

func runE(cmd *cobra.Command, _ *slog.Logger, s streams.IOStreams, flags *flagpole) error {
	ref, err := flags.validate()
	if err != nil {
		return err
	}
	img, err := image.Build(image.Options{Binary: flags.Binary, Ref: flags.Ref})
	if err != nil {
		if flags.Binary != "" {
			return clierr.Usagef("--binary: %v", err)
		}
		return fmt.Errorf("the running cnibench: %w; or pass --binary", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if flags.Out != "" {
		if err := image.WriteTarball(img, flags.Ref, flags.Out); err != nil {
			return err
		}
		_, err := fmt.Fprintf(s.Out, "wrote %s (%s) to %s\n", flags.Ref, digest, flags.Out)
		return err
	}
	pushed, err := image.Push(cmd.Context(), img, flags.Ref, image.PushOptions{Insecure: flags.Insecure})
	if err != nil {
		return err
	}
	at := pushed.String()
	if tag, ok := ref.(name.Tag); ok {
		at = tag.String() + "@" + pushed.DigestStr()
	}
	_, err = fmt.Fprintf(s.Out, "pushed %s\n", at)
	return err
}

// validate checks the flags and parses --ref; bad values are usage errors.
func (f *flagpole) validate() (name.Reference, error) {
	switch {
	case f.Out == "" && !f.Push:
		return nil, clierr.Usagef("--out FILE.tar or --push: pass one (--out writes a tarball for 'ctr -n k8s.io images import', --push uploads to the registry of --ref)")
	case f.Out != "" && f.Push:
		return nil, clierr.Usagef("--out and --push: pass only one (write the tarball, or push)")
	case f.Insecure && !f.Push:
		return nil, clierr.Usagef("--insecure: only with --push (a tarball has no registry)")
	case f.Ref == "":
		return nil, clierr.Usagef("--ref: must not be empty (default %s)", image.DefaultRef())
	}
	var opts []name.Option
	if f.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(f.Ref, opts...)
	if err != nil {
		return nil, clierr.Usagef("--ref %q: %v; want REGISTRY/REPOSITORY:TAG, e.g. %s", f.Ref, err, image.DefaultRef())
	}
	if _, ok := ref.(name.Tag); !ok && f.Out != "" {
		return nil, clierr.Usagef("--ref %s: a tarball needs a tag, not a digest, e.g. %s", f.Ref, image.DefaultRef())
	}
	return ref, nil
}
