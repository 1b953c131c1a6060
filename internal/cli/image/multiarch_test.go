package imagecmd

import (
	"archive/tar"
	"debug/elf"
	"flag"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/image/imagetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeELF is imagetest.FakeELF.
var fakeELF = imagetest.FakeELF

// fixedBuild makes the image labels (version, revision) fixed for the test.
func fixedBuild(t *testing.T) {
	v, c := buildinfo.Version, buildinfo.Commit
	buildinfo.Version, buildinfo.Commit = "0.1.0", "abc1234"
	t.Cleanup(func() { buildinfo.Version, buildinfo.Commit = v, c })
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s--- want\n%s", p, got, want)
	}
}

func TestBuildMultiPlatformOutput(t *testing.T) {
	fixedBuild(t)
	dir := t.TempDir()
	amd := fakeELF(t, dir, "cnibench-linux-amd64", elf.EM_X86_64, "amd64")
	arm := fakeELF(t, dir, "cnibench-linux-arm64", elf.EM_AARCH64, "arm64")
	out := filepath.Join(dir, "cnibench-image.tar")
	ref := "registry.example.com/team/cnibench:v1"

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	pushRef := host + "/team/cnibench:v1"
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // anonymous

	tests := []struct {
		golden string
		args   []string
	}{
		{"multi-out.txt", []string{"--binary", amd, "--binary", "linux/arm64=" + arm, "--ref", ref, "--out", out}},
		{"multi-out.txt", []string{"--binary", arm, "--binary", amd, "--ref", ref, "--out", out}},
		{"multi-push.txt", []string{"--binary", amd, "--binary", arm, "--ref", pushRef, "--push"}},
		{"single-out.txt", []string{"--binary", amd, "--ref", ref, "--out", out}},
		{"single-arm64-push.txt", []string{"--binary", "linux/arm64=" + arm, "--ref", host + "/team/cnibench:single", "--push"}},
	}
	for _, tc := range tests {
		stdout, stderr, code := clitest.Execute(t, NewCommand, append([]string{"build"}, tc.args...)...)
		if code != 0 || stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q", tc.golden, code, stderr)
		}
		got := strings.NewReplacer(dir, "$DIR", host, "$REGISTRY").Replace(stdout)
		golden(t, tc.golden, got)
	}

	// What the multi-platform push printed is what the registry holds.
	r, err := name.ParseReference(pushRef)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	want, err := os.ReadFile(filepath.Join("testdata", "multi-push.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(want), "index        "+d.String()+"\n") {
		t.Errorf("the registry holds index %s, not the one multi-push.txt names", d)
	}
}

func TestBuildMultiPlatformArchive(t *testing.T) {
	fixedBuild(t)
	dir := t.TempDir()
	amd := fakeELF(t, dir, "a", elf.EM_X86_64, "amd64")
	arm := fakeELF(t, dir, "b", elf.EM_AARCH64, "arm64")
	out := filepath.Join(dir, "img.tar")
	stdout, stderr, code := clitest.Execute(t, NewCommand, "build", "--binary", amd, "--binary", arm, "--ref", "cnibench.local/cnibench:t", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The archive is an OCI layout whose index.json names the printed index.
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root := t.TempDir()
	if err := untar(f, root); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(root)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index.json: %v, %v; want one descriptor", m, err)
	}
	if !strings.Contains(stdout, "index        "+m.Manifests[0].Digest.String()+"\n") {
		t.Errorf("stdout %q does not name the archive's index %s", stdout, m.Manifests[0].Digest)
	}
	if got := m.Manifests[0].Annotations["io.containerd.image.name"]; got != "cnibench.local/cnibench:t" {
		t.Errorf("containerd name %q", got)
	}
}

func TestBuildMultiPlatformRefuses(t *testing.T) {
	dir := t.TempDir()
	amd := fakeELF(t, dir, "amd", elf.EM_X86_64, "1")
	amd2 := fakeELF(t, dir, "amd2", elf.EM_X86_64, "2")
	arm := fakeELF(t, dir, "arm", elf.EM_AARCH64, "3")
	vax := fakeELF(t, dir, "vax", elf.EM_VAX, "4")
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.tar")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"same platform twice", []string{"--binary", amd, "--binary", arm, "--binary", amd2},
			"--binary " + amd2 + ": platform linux/amd64 again (already " + amd + "): pass one binary per platform"},
		{"declared platform differs from ELF", []string{"--binary", "linux/arm64=" + amd, "--binary", arm},
			"--binary linux/arm64=" + amd + `: platform "linux/arm64": ` + amd + " is built for GOARCH=amd64; declare linux/amd64 or rebuild it with GOARCH=arm64"},
		{"single binary differs from ELF", []string{"--binary", "linux/arm64=" + amd},
			"--binary linux/arm64=" + amd + `: platform "linux/arm64": ` + amd + " is built for GOARCH=amd64"},
		{"unknown architecture", []string{"--binary", vax, "--binary", amd},
			"--binary " + vax + ": its ELF header names no architecture this program knows; declare it, e.g. linux/ARCH=" + vax},
		{"not ELF among several", []string{"--binary", amd, "--binary", script},
			"--binary " + script + ": " + script + ": not an ELF executable"},
		{"missing among several", []string{"--binary", amd, "--binary", filepath.Join(dir, "nope")},
			"--binary " + filepath.Join(dir, "nope") + ": open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"empty", []string{"--binary", ""}, "--binary empty: want PATH or OS/ARCH=PATH"},
		{"no path", []string{"--binary", "linux/arm64="}, `--binary "linux/arm64=": no path after '='`},
		{"bad platform", []string{"--binary", "linux/=" + amd, "--binary", arm}, "--binary linux/=" + amd + ": "},
	}
	for _, tc := range tests {
		args := append([]string{"build", "--out", out}, tc.args...)
		stdout, stderr, code := clitest.Execute(t, NewCommand, args...)
		line := strings.TrimSuffix(stderr, "\n")
		if code != 2 || stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "cnibench: "+tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one line starting %q", tc.name, code, stdout, stderr, "cnibench: "+tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote %s", out)
	}
}

// untar extracts the regular files and directories of the tar r into dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
		}
		if err != nil {
			return err
		}
	}
}
