package image

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

const (
	// AnnotationContainerdName is the index.json annotation containerd's
	// importer (ctr images import, kind load image-archive) names the image
	// by.
	AnnotationContainerdName = "io.containerd.image.name"
	// AnnotationRefName is the OCI layout's tag annotation.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// ContainerdName returns the name containerd and the kubelet give the image
// tag, e.g. docker.io/library/x:1 for x:1 (name.Tag's Docker Hub host,
// index.docker.io, is docker.io to them).
func ContainerdName(tag name.Tag) string {
	reg := tag.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// WriteOCIArchive writes idx, tagged ref, to path as an OCI archive: the
// OCI image layout (layout.Write) in a tar, its index.json naming the image
// index with the annotations io.containerd.image.name (the full reference)
// and org.opencontainers.image.ref.name (the tag). `ctr -n k8s.io images
// import --all-platforms FILE` and `kind load image-archive FILE` import it
// under ref. The tar is reproducible (sorted entries, fixed times, owner
// 0:0) and written to a temporary file beside path, renamed over it when
// complete; the layout is staged in a temporary directory, removed after.
func WriteOCIArchive(idx v1.ImageIndex, ref string, path string) (err error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	tag, ok := r.(name.Tag)
	if !ok {
		return fmt.Errorf("image reference %q: an archive needs a tag (e.g. %s), not a digest", ref, DefaultRef())
	}
	stage, err := os.MkdirTemp("", "cnibench-oci-layout-")
	if err != nil {
		return fmt.Errorf("staging the OCI layout: %w", err)
	}
	defer os.RemoveAll(stage)
	lp, err := layout.Write(stage, empty.Index)
	if err != nil {
		return fmt.Errorf("staging the OCI layout: %w", err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationContainerdName: ContainerdName(tag),
		AnnotationRefName:        tag.TagStr(),
	})); err != nil {
		return fmt.Errorf("staging the OCI layout: %w", err)
	}

	return writeFile(path, func(w io.Writer) error { return tarDir(w, stage) })
}

// tarDir writes the tree under dir to w as a tar with paths relative to dir
// (oci-layout, index.json, blobs/sha256/...), sorted, dated Epoch, owned by
// 0:0, directories 0755 and files 0644.
func tarDir(w io.Writer, dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: Epoch, Format: tar.FormatUSTAR}
		switch {
		case fi.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		case fi.Mode().IsRegular():
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, fi.Size()
		default:
			return fmt.Errorf("%s: not a file or directory", rel)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if err := copyFile(tw, p); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
