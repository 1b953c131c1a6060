package image

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/cnibench/cnibench/internal/image/imagetest"
)

// fakeELF is imagetest.FakeELF.
var fakeELF = imagetest.FakeELF

func TestParseBinary(t *testing.T) {
	tests := []struct {
		in   string
		want Binary
		err  string
	}{
		{"bin/cnibench", Binary{Path: "bin/cnibench"}, ""},
		{"/abs/cnibench", Binary{Path: "/abs/cnibench"}, ""},
		{"linux/arm64=bin/cnibench-arm64", Binary{Path: "bin/cnibench-arm64", Platform: "linux/arm64"}, ""},
		{"linux/arm/v7=x", Binary{Path: "x", Platform: "linux/arm/v7"}, ""},
		{"linux/amd64=a=b", Binary{Path: "a=b", Platform: "linux/amd64"}, ""},
		{"./linux/arm64=x", Binary{Path: "./linux/arm64=x"}, ""},
		{"dir/My File=1", Binary{Path: "dir/My File=1"}, ""},
		{"a=b", Binary{Path: "a=b"}, ""},
		{"", Binary{}, "empty: want PATH or OS/ARCH=PATH"},
		{"linux/arm64=", Binary{}, "no path after '='"},
	}
	for _, tc := range tests {
		got, err := ParseBinary(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseBinary(%q) = %v, %v; want a one-line error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBinary(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("ParseBinary(%q).String() = %q", tc.in, got.String())
		}
	}
}

// twoPlatforms returns an amd64 and an arm64 fake binary.
func twoPlatforms(t *testing.T) (amd, arm string) {
	dir := t.TempDir()
	return fakeELF(t, dir, "cnibench-amd64", elf.EM_X86_64, "amd64 payload"),
		fakeELF(t, dir, "cnibench-arm64", elf.EM_AARCH64, "arm64 payload")
}

func TestBuildIndex(t *testing.T) {
	amd, arm := twoPlatforms(t)
	idx, err := BuildIndex([]Binary{{Path: arm}, {Path: amd, Platform: "linux/amd64"}}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.Index.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
	}
	if d, _ := idx.Index.Digest(); d != idx.Digest {
		t.Errorf("Index.Digest %s, the index's %s", idx.Digest, d)
	}
	im, err := idx.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantPlat := []string{"linux/amd64", "linux/arm64"}
	wantBin := []string{amd, arm}
	if len(im.Manifests) != 2 || len(idx.Images) != 2 {
		t.Fatalf("index has %d manifests and %d images, want 2", len(im.Manifests), len(idx.Images))
	}
	for i, desc := range im.Manifests {
		pi := idx.Images[i]
		if desc.Platform == nil || desc.Platform.String() != wantPlat[i] || pi.Platform.String() != wantPlat[i] {
			t.Errorf("manifest %d: platform %v (image %v), want %s", i, desc.Platform, pi.Platform, wantPlat[i])
		}
		if desc.Digest != pi.Digest || desc.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: %s %s, want %s %s", i, desc.MediaType, desc.Digest, types.OCIManifestSchema1, pi.Digest)
		}
		if pi.Binary.Path != wantBin[i] {
			t.Errorf("image %d holds %s, want %s", i, pi.Binary.Path, wantBin[i])
		}
		checkImage(t, pi.Image, wantPlat[i], wantBin[i], true)
	}
}

// checkImage checks img as Build makes it: its platform, entrypoint, label,
// media types and layer (the binary, 0755 and readable and runnable by any
// user, and /tmp 1777).
func checkImage(t *testing.T, img v1.Image, plat, bin string, oci bool) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.OS + "/" + cf.Architecture; got != plat {
		t.Errorf("%s: config platform %s, want %s", plat, got, plat)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != BinaryPath || cf.Config.Labels[LabelVersion] != "1.2.3" {
		t.Errorf("%s: entrypoint %q labels %v", plat, cf.Config.Entrypoint, cf.Config.Labels)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, wantLayer := types.DockerConfigJSON, types.DockerLayer
	if oci {
		wantCfg, wantLayer = types.OCIConfigJSON, types.OCILayer
	}
	if m.Config.MediaType != wantCfg || len(m.Layers) != 1 || m.Layers[0].MediaType != wantLayer {
		t.Errorf("%s: config %s layers %+v, want %s and one %s", plat, m.Config.MediaType, m.Layers, wantCfg, wantLayer)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]int64{}
	for _, e := range layerEntries(t, img) {
		modes[e.hdr.Name] = e.hdr.Mode
		if e.hdr.Name == "cnibench" && !bytes.Equal(e.data, data) {
			t.Errorf("%s: /cnibench is not %s", plat, bin)
		}
	}
	if modes["cnibench"] != 0o755 || modes["tmp/"] != 0o1777 || len(modes) != 2 {
		t.Errorf("%s: layer modes %v, want cnibench 0755 and tmp/ 01777", plat, modes)
	}
	// uid 65532 is "other": it must read and execute /cnibench.
	if modes["cnibench"]&0o005 != 0o005 {
		t.Errorf("%s: /cnibench mode %o is not readable and executable by other users", plat, modes["cnibench"])
	}
}

func TestBuildIndexReproducible(t *testing.T) {
	amd, arm := twoPlatforms(t)
	build := func(bins ...Binary) v1.Hash {
		t.Helper()
		idx, err := BuildIndex(bins, "1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		return idx.Digest
	}
	d1 := build(Binary{Path: amd}, Binary{Path: arm})
	if d2 := build(Binary{Path: amd}, Binary{Path: arm}); d2 != d1 {
		t.Fatalf("the same binaries gave %s and %s", d1, d2)
	}
	if d3 := build(Binary{Path: arm, Platform: "linux/arm64"}, Binary{Path: amd}); d3 != d1 {
		t.Fatalf("the same binaries in another order gave %s, first %s", d3, d1)
	}
	other := fakeELF(t, t.TempDir(), "other", elf.EM_AARCH64, "another arm64 payload")
	if d4 := build(Binary{Path: amd}, Binary{Path: other}); d4 == d1 {
		t.Fatalf("another arm64 binary gave the same index digest %s", d4)
	}
}

func TestBuildIndexRefuses(t *testing.T) {
	amd, arm := twoPlatforms(t)
	dir := t.TempDir()
	amd2 := fakeELF(t, dir, "amd2", elf.EM_X86_64, "second")
	unknown := fakeELF(t, dir, "vax", elf.EM_VAX, "")
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		bins []Binary
		want []string
	}{
		{"none", nil, []string{"no binaries"}},
		{"same platform twice", []Binary{{Path: amd}, {Path: arm}, {Path: amd2}},
			[]string{amd2 + ": platform linux/amd64 again (already " + amd + ")", "one binary per platform"}},
		{"arm64 and arm64/v8", []Binary{{Path: arm}, {Path: arm, Platform: "linux/arm64/v8"}},
			[]string{"linux/arm64/v8=" + arm + ": platform linux/arm64/v8 again"}},
		{"ELF differs from platform", []Binary{{Path: amd}, {Path: amd, Platform: "linux/arm64"}},
			[]string{"linux/arm64=" + amd + ": ", "is built for GOARCH=amd64; declare linux/amd64", "GOARCH=arm64"}},
		{"unknown machine", []Binary{{Path: unknown}}, []string{unknown + ": ", "declare it, e.g. linux/ARCH=" + unknown}},
		{"not ELF", []Binary{{Path: amd}, {Path: script}}, []string{script + ": " + script + ": not an ELF executable"}},
		{"bad platform", []Binary{{Path: amd, Platform: "linux"}}, []string{"want GOOS/GOARCH"}},
	}
	for _, tc := range tests {
		_, err := BuildIndex(tc.bins, "")
		if err == nil {
			t.Errorf("%s: BuildIndex succeeded", tc.name)
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
	// A declared platform for an unknown machine is taken as declared.
	if _, err := BuildIndex([]Binary{{Path: unknown, Platform: "linux/vax"}}, ""); err != nil {
		t.Errorf("declared platform of an unknown machine: %v", err)
	}
}

// authRegistry is an in-memory registry that wants basic auth user:pass.
func authRegistry(t *testing.T) (host string) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:pass"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// dockerConfig points DOCKER_CONFIG at a config.json with auths for host.
func dockerConfig(t *testing.T, host, userpass string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(userpass))
	cfg := `{"auths": {"` + host + `": {"auth": "` + auth + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}

func TestPushIndex(t *testing.T) {
	amd, arm := twoPlatforms(t)
	idx, err := BuildIndex([]Binary{{Path: amd}, {Path: arm}}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	host := authRegistry(t)
	ctx := context.Background()
	ref := host + "/team/cnibench:multi"

	dockerConfig(t, host, "user:wrong")
	if _, err := PushIndex(ctx, idx.Index, ref, PushOptions{}); err == nil || !strings.Contains(err.Error(), "pushing "+ref) {
		t.Fatalf("push with wrong credentials: %v, want a 'pushing %s' error", err, ref)
	}

	dockerConfig(t, host, "user:pass")
	got, err := PushIndex(ctx, idx.Index, ref, PushOptions{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != host+"/team/cnibench@"+idx.Digest.String() {
		t.Errorf("PushIndex returned %s, want %s/team/cnibench@%s", got, host, idx.Digest)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	auth := remote.WithAuth(&authn.Basic{Username: "user", Password: "pass"})
	pulled, err := remote.Index(r, remote.WithContext(ctx), auth)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	if d, _ := pulled.Digest(); d != idx.Digest {
		t.Errorf("pulled index %s, pushed %s", d, idx.Digest)
	}
	for _, pi := range idx.Images {
		img, err := remote.Image(r, remote.WithContext(ctx), auth, remote.WithPlatform(pi.Platform))
		if err != nil {
			t.Fatalf("pulling %s for %s: %v", ref, pi.Platform, err)
		}
		if d, _ := img.Digest(); d != pi.Digest {
			t.Errorf("%s: pulled %s, want %s", pi.Platform, d, pi.Digest)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := PushIndex(cctx, idx.Index, host+"/team/cnibench:cancelled", PushOptions{}); err == nil {
		t.Error("PushIndex with a cancelled context succeeded")
	}
	if _, err := PushIndex(ctx, idx.Index, "Not A Ref", PushOptions{}); err == nil {
		t.Error("PushIndex of a bad reference succeeded")
	}
}
