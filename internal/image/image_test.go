package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/cnibench/cnibench/internal/buildinfo"
	"github.com/cnibench/cnibench/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveStaticHello()
	os.Exit(code)
}

// staticBinary returns the path of a tiny statically linked binary.
func staticBinary(t *testing.T) string { return testutil.StaticHello(t) }

func TestSanitizeTag(t *testing.T) {
	long := strings.Repeat("a", 200)
	tests := []struct{ in, want string }{
		{"0.1.0", "0.1.0"},
		{"v0.1.0", "v0.1.0"},
		{"0.1.0-dev", "0.1.0-dev"},
		{"0.1.0+dirty", "0.1.0-dirty"},
		{"1.2.3 (abc/def)", "1.2.3--abc-def-"},
		{"feature/x_y", "feature-x_y"},
		{".hidden", "hidden"},
		{"-.-1", "1"},
		{"_ok", "_ok"},
		{"", "dev"},
		{"...", "dev"},
		{"+++", "dev"},
		{"ünï", "n-"},
		{long, long[:128]},
	}
	for _, tc := range tests {
		got := SanitizeTag(tc.in)
		if got != tc.want {
			t.Errorf("SanitizeTag(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if _, err := name.NewTag(DefaultRepository+":"+got, name.StrictValidation); err != nil {
			t.Errorf("SanitizeTag(%q) = %q is not a valid tag: %v", tc.in, got, err)
		}
	}
}

func TestDefaultRef(t *testing.T) {
	saved := buildinfo.Version
	t.Cleanup(func() { buildinfo.Version = saved })
	for _, tc := range []struct{ version, want string }{
		{"0.1.0", "cnibench.local/cnibench:0.1.0"},
		{"0.1.0-dev", "cnibench.local/cnibench:0.1.0-dev"},
		{"1.0+meta", "cnibench.local/cnibench:1.0-meta"},
		{"", "cnibench.local/cnibench:dev"},
	} {
		buildinfo.Version = tc.version
		got := DefaultRef()
		if got != tc.want {
			t.Errorf("version %q: DefaultRef() = %q, want %q", tc.version, got, tc.want)
		}
		tag, err := name.NewTag(got, name.StrictValidation)
		if err != nil {
			t.Errorf("DefaultRef() = %q: %v", got, err)
			continue
		}
		if tag.RegistryStr() != "cnibench.local" || tag.RepositoryStr() != "cnibench" {
			t.Errorf("DefaultRef() = %q parses as registry %q repository %q", got, tag.RegistryStr(), tag.RepositoryStr())
		}
	}
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

func layerEntries(t *testing.T, img v1.Image) []entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{h, b})
	}
}

func TestBuild(t *testing.T) {
	bin := staticBinary(t)
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Build(Options{Binary: bin, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}

	ents := layerEntries(t, img)
	if len(ents) != 2 {
		t.Fatalf("layer has %d entries, want 2 (cnibench, tmp/)", len(ents))
	}
	for _, tc := range []struct {
		name  string
		typ   byte
		mode  int64
		isBin bool
	}{
		{"cnibench", tar.TypeReg, 0o755, true},
		{"tmp/", tar.TypeDir, 0o1777, false},
	} {
		var e *entry
		for i := range ents {
			if ents[i].hdr.Name == tc.name {
				e = &ents[i]
			}
		}
		if e == nil {
			t.Errorf("layer has no %s", tc.name)
			continue
		}
		h := e.hdr
		if h.Typeflag != tc.typ || h.Mode != tc.mode || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: type %c mode %o uid %d gid %d, want type %c mode %o uid 0 gid 0", tc.name, h.Typeflag, h.Mode, h.Uid, h.Gid, tc.typ, tc.mode)
		}
		if !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: mtime %v, want %v", tc.name, h.ModTime, Epoch)
		}
		if tc.isBin && !bytes.Equal(e.data, want) {
			t.Errorf("%s: %d bytes differ from the %d-byte binary", tc.name, len(e.data), len(want))
		}
		if !tc.isBin && len(e.data) != 0 {
			t.Errorf("%s: %d bytes of content", tc.name, len(e.data))
		}
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if strings.Join(c.Entrypoint, " ") != "/cnibench" || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/cnibench] and no cmd", c.Entrypoint, c.Cmd)
	}
	if strings.Join(c.Env, " ") != "PATH=/" || c.WorkingDir != "/" {
		t.Errorf("env %q workdir %q, want [PATH=/] and /", c.Env, c.WorkingDir)
	}
	if c.Labels[LabelTitle] != "cnibench" || c.Labels[LabelVersion] != "1.2.3" {
		t.Errorf("labels %v, want %s=cnibench and %s=1.2.3", c.Labels, LabelTitle, LabelVersion)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Time.Equal(Epoch) {
		t.Errorf("created %v, want %v", cf.Created.Time, Epoch)
	}
	if len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 {
		t.Errorf("config has %d diff ids and %d history entries, want 1 and 1", len(cf.RootFS.DiffIDs), len(cf.History))
	}

	// The default version label is the running build's.
	img2, err := Build(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	cf2, err := img2.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf2.Config.Labels[LabelVersion]; got != buildinfo.Version {
		t.Errorf("default version label %q, want buildinfo.Version %q", got, buildinfo.Version)
	}
}

func TestBuildReproducible(t *testing.T) {
	bin := staticBinary(t)
	digest := func(path string) v1.Hash {
		t.Helper()
		img, err := Build(Options{Binary: path, Version: "1.2.3"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d1, d2 := digest(bin), digest(bin)
	if d1 != d2 {
		t.Fatalf("the same binary gave %s and %s", d1, d2)
	}
	// A copy with another name, mode and mtime gives the same image.
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "other-name")
	if err := os.WriteFile(cp, data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(cp, time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if d3 := digest(cp); d3 != d1 {
		t.Fatalf("a copy of the binary gave %s, the original %s", d3, d1)
	}
	// Another binary gives another image.
	if err := os.WriteFile(cp, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if d4 := digest(cp); d4 == d1 {
		t.Fatalf("a different binary gave the same digest %s", d4)
	}
}

func TestBuildRefuses(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       []string
	}{
		{"non-ELF", script, []string{"not an ELF executable", "CGO_ENABLED=0"}},
		{"short non-ELF", short, []string{"not an ELF executable (too short)", "CGO_ENABLED=0"}},
		{"directory", dir, []string{"not an ELF executable"}},
		{"missing", filepath.Join(dir, "nope"), []string{"no such file"}},
	}
	if dyn := dynamicBinary(); dyn != "" {
		tests = append(tests, struct {
			name, path string
			want       []string
		}{"dynamic", dyn, []string{"dynamically linked", "build it with CGO_ENABLED=0"}})
	} else {
		t.Log("no dynamically linked /bin/true or /usr/bin/true: not testing that refusal")
	}
	for _, tc := range tests {
		_, err := Build(Options{Binary: tc.path})
		if err == nil {
			t.Errorf("%s: Build(%s) succeeded", tc.name, tc.path)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
}

// dynamicBinary returns a dynamically linked executable of the system, or "".
func dynamicBinary() string {
	for _, p := range []string{"/bin/true", "/usr/bin/true", "/bin/sh"} {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				f.Close()
				return p
			}
		}
		f.Close()
	}
	return ""
}

func TestPlatform(t *testing.T) {
	bin := staticBinary(t)
	other := "s390x"
	if runtime.GOARCH == other {
		other = "amd64"
	}
	tests := []struct {
		platform string
		want     string // "os/arch/variant", or an error substring after "error: "
	}{
		{"", "linux/" + runtime.GOARCH + "/"},
		{"linux/" + runtime.GOARCH, "linux/" + runtime.GOARCH + "/"},
		{"linux/" + runtime.GOARCH + "/v9", "linux/" + runtime.GOARCH + "/v9"},
		{"linux/" + other, "error: is built for GOARCH=" + runtime.GOARCH},
		{"linux", "error: want GOOS/GOARCH"},
		{"a/b/c/d", "error: want GOOS/GOARCH"},
	}
	for _, tc := range tests {
		img, err := Build(Options{Binary: bin, Platform: tc.platform})
		if e, ok := strings.CutPrefix(tc.want, "error: "); ok {
			if err == nil || !strings.Contains(err.Error(), e) {
				t.Errorf("platform %q: got %v, want an error with %q", tc.platform, err, e)
			}
			continue
		}
		if err != nil {
			t.Errorf("platform %q: %v", tc.platform, err)
			continue
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := cf.OS + "/" + cf.Architecture + "/" + cf.Variant; got != tc.want {
			t.Errorf("platform %q: image is %s, want %s", tc.platform, got, tc.want)
		}
	}
}

func TestWriteTarballRoundTrip(t *testing.T) {
	img, err := Build(Options{Binary: staticBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cnibench.tar")
	ref := DefaultRef()
	if err := os.WriteFile(path, []byte("an older file, replaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteTarball(img, ref, path); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d files after WriteTarball, want only the tarball", len(ents))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("tarball: %v, %v; want mode 0644", fi, err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != ref {
		t.Fatalf("manifest.json %+v, want one image tagged %s", m, ref)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	got, err := back.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("tarball round trip: digest %s, want %s", got, want)
	}

	// A digest reference names no tag for the importer.
	err = WriteTarball(img, "cnibench.local/cnibench@"+want.String(), filepath.Join(dir, "x.tar"))
	if err == nil || !strings.Contains(err.Error(), "needs a tag") {
		t.Errorf("digest reference: got %v, want a 'needs a tag' error", err)
	}
	if err := WriteTarball(img, "Not A Ref", filepath.Join(dir, "y.tar")); err == nil {
		t.Error("a bad reference was accepted")
	}
	if err := WriteTarball(img, ref, filepath.Join(dir, "no-such-dir", "z.tar")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("dir holds %d files after the failed writes, want only the tarball", len(ents))
	}
}

func TestPush(t *testing.T) {
	img, err := Build(Options{Binary: staticBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	for _, insecure := range []bool{false, true} {
		ref := host + "/cnibench/cnibench:test"
		got, err := Push(ctx, img, ref, PushOptions{Insecure: insecure})
		if err != nil {
			t.Fatalf("insecure=%v: %v", insecure, err)
		}
		if got.DigestStr() != want.String() || got.Context().String() != host+"/cnibench/cnibench" {
			t.Errorf("insecure=%v: Push returned %s, want %s/cnibench/cnibench@%s", insecure, got, host, want)
		}
		for _, r := range []string{ref, got.String()} {
			pr, err := name.ParseReference(r)
			if err != nil {
				t.Fatal(err)
			}
			pulled, err := remote.Image(pr, remote.WithContext(ctx))
			if err != nil {
				t.Fatalf("pulling %s: %v", r, err)
			}
			if d, err := pulled.Digest(); err != nil || d != want {
				t.Errorf("pulled %s: digest %s (%v), want %s", r, d, err, want)
			}
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Push(cctx, img, host+"/cnibench/cnibench:cancelled", PushOptions{}); err == nil {
		t.Error("Push with a cancelled context succeeded")
	}
	if _, err := Push(ctx, img, "Not A Ref", PushOptions{}); err == nil {
		t.Error("Push of a bad reference succeeded")
	}
}
