package image

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func TestContainerdName(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"cnibench.local/cnibench:0.1.0", "cnibench.local/cnibench:0.1.0"},
		{"registry.example.com:5000/team/cnibench:v1", "registry.example.com:5000/team/cnibench:v1"},
		{"cnibench:v1", "docker.io/library/cnibench:v1"},
		{"team/cnibench", "docker.io/team/cnibench:latest"},
	} {
		tag, err := name.NewTag(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := ContainerdName(tag); got != tc.want {
			t.Errorf("ContainerdName(%s) = %s, want %s", tc.ref, got, tc.want)
		}
	}
}

// untar extracts the tar at path into a new directory and returns it and
// the tar's entries in order.
func untar(t *testing.T, path string) (string, []*tar.Header) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	var hdrs []*tar.Header
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir, hdrs
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: tar entry of type %c", h.Name, h.Typeflag)
		}
	}
}

func TestWriteOCIArchiveRoundTrip(t *testing.T) {
	amd, arm := twoPlatforms(t)
	idx, err := BuildIndex([]Binary{{Path: amd}, {Path: arm}}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cnibench.tar")
	ref := "registry.example.com/team/cnibench:v1"
	if err := os.WriteFile(path, []byte("an older file, replaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteOCIArchive(idx.Index, ref, path); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d files after WriteOCIArchive, want only the archive", len(ents))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("archive: %v, %v; want mode 0644", fi, err)
	}

	root, hdrs := untar(t, path)
	var names []string
	for _, h := range hdrs {
		names = append(names, h.Name)
		if !h.ModTime.Equal(Epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mtime %v uid %d gid %d, want %v 0 0", h.Name, h.ModTime, h.Uid, h.Gid, Epoch)
		}
	}
	// 2 images x (manifest, config, layer) + the index = 7 blobs.
	if len(names) != 2+7+2 || names[0] != "blobs/" || names[1] != "blobs/sha256/" ||
		names[len(names)-2] != "index.json" || names[len(names)-1] != "oci-layout" {
		t.Errorf("archive entries %q, want blobs/, blobs/sha256/, 7 blobs, index.json, oci-layout", names)
	}

	lp, err := layout.FromPath(root)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("index.json has %d descriptors, want 1 (the image index)", len(tm.Manifests))
	}
	desc := tm.Manifests[0]
	if desc.MediaType != types.OCIImageIndex || desc.Digest != idx.Digest {
		t.Errorf("index.json names %s %s, want %s %s", desc.MediaType, desc.Digest, types.OCIImageIndex, idx.Digest)
	}
	if desc.Annotations[AnnotationContainerdName] != ref || desc.Annotations[AnnotationRefName] != "v1" {
		t.Errorf("index.json annotations %v, want %s=%s and %s=v1", desc.Annotations, AnnotationContainerdName, ref, AnnotationRefName)
	}
	back, err := top.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(back); err != nil {
		t.Fatalf("the index read back is inconsistent: %v", err)
	}
	bm, err := back.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(bm.Manifests) != len(idx.Images) {
		t.Fatalf("read back %d manifests, want %d", len(bm.Manifests), len(idx.Images))
	}
	for i, d := range bm.Manifests {
		pi := idx.Images[i]
		if d.Platform == nil || d.Platform.String() != pi.Platform.String() || d.Digest != pi.Digest {
			t.Errorf("read back manifest %d: %v %s, want %s %s", i, d.Platform, d.Digest, pi.Platform, pi.Digest)
		}
		img, err := back.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, pi.Platform.String(), pi.Binary.Path, true)
	}

	// Reproducible: the same index gives the same bytes.
	again := filepath.Join(dir, "again.tar")
	if err := WriteOCIArchive(idx.Index, ref, again); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("two archives of the same index differ")
	}
	os.Remove(again)

	for _, tc := range []struct{ ref, path, want string }{
		{"registry.example.com/cnibench@" + idx.Digest.String(), filepath.Join(dir, "x.tar"), "needs a tag"},
		{"Not A Ref", filepath.Join(dir, "y.tar"), "image reference"},
		{ref, filepath.Join(dir, "no-such-dir", "z.tar"), "no such file"},
	} {
		err := WriteOCIArchive(idx.Index, tc.ref, tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteOCIArchive(%s, %s): %v, want an error with %q", tc.ref, tc.path, err, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d files after the failed writes, want only the archive", len(ents))
	}
}

// TestWriteTarballSinglePlatform: one platform keeps the docker-archive of
// Build's image, which reads back with the same digest and contents.
func TestWriteTarballSinglePlatform(t *testing.T) {
	amd, _ := twoPlatforms(t)
	img, err := Build(Options{Binary: amd, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, img, "linux/amd64", amd, false)
	path := filepath.Join(t.TempDir(), "one.tar")
	ref := "cnibench.local/cnibench:one"
	if err := WriteTarball(img, ref, path); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(ref)
	back, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := back.Digest(); got != want {
		t.Errorf("docker-archive round trip: %s, want %s", got, want)
	}
	checkImage(t, back, "linux/amd64", amd, false)
}
