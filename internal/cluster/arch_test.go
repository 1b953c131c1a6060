package cluster

import (
	"context"
	"debug/elf"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	corev1 "k8s.io/api/core/v1"

	"github.com/cnibench/cnibench/internal/backend"
	"github.com/cnibench/cnibench/internal/image"
	"github.com/cnibench/cnibench/internal/image/imagetest"
	"github.com/cnibench/cnibench/internal/testutil"
)

// archNode labels a fake node with its architecture.
func archNode(name, ip, arch string) *corev1.Node {
	n := testNode(name, ip)
	n.Labels[corev1.LabelArchStable] = arch
	n.Labels[corev1.LabelOSStable] = "linux"
	return n
}

// TestNodeArches: without --node-arch the nodes must be of the image's
// platforms, read from its registry (an in-memory one here); an image no
// registry serves falls back to this binary's architecture with one
// warning naming --node-arch; a registry that does not answer is waited
// for at most the bound; --node-arch always wins.
func TestNodeArches(t *testing.T) {
	defer func(d time.Duration) { imageInspectTimeout = d }(imageInspectTimeout)
	imageInspectTimeout = 300 * time.Millisecond
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: an anonymous registry

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	dir := t.TempDir()
	amd := imagetest.FakeELF(t, dir, "cnibench-amd64", elf.EM_X86_64, "amd64")
	arm := imagetest.FakeELF(t, dir, "cnibench-arm64", elf.EM_AARCH64, "arm64")
	ctx := context.Background()
	idx, err := image.BuildIndex([]image.Binary{{Path: amd}, {Path: arm}}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := image.PushIndex(ctx, idx.Index, host+"/cnibench:multi", image.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	one, err := image.Build(image.Options{Binary: arm, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := image.Push(ctx, one, host+"/cnibench:arm64", image.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(stall.Close)

	tests := []struct {
		name      string
		image     string
		given     []string // --node-arch
		nodeArch  string   // both nodes'
		want      []string
		warn      bool   // the fallback's warning
		upErr     string // "" : Up succeeds
		maxWallMs int64
	}{
		{name: "index in a registry", image: host + "/cnibench:multi", nodeArch: "arm64", want: []string{"amd64", "arm64"}},
		{name: "one platform in a registry", image: host + "/cnibench:arm64", nodeArch: "arm64", want: []string{"arm64"}},
		{name: "one platform, nodes of another", image: host + "/cnibench:arm64", nodeArch: "amd64", want: []string{"arm64"},
			upErr: "arch amd64: the image has no such platform (it has arm64)"},
		{name: "imported on the nodes (.local)", image: testImage, nodeArch: runtime.GOARCH, want: []string{runtime.GOARCH}, warn: true},
		{name: "registry gone", image: "127.0.0.1:1/cnibench:x", nodeArch: runtime.GOARCH, want: []string{runtime.GOARCH}, warn: true},
		{name: "registry stalls: bounded", image: strings.TrimPrefix(stall.URL, "http://") + "/cnibench:x", nodeArch: runtime.GOARCH,
			want: []string{runtime.GOARCH}, warn: true, maxWallMs: 3000},
		{name: "--node-arch wins", image: host + "/cnibench:arm64", given: []string{"s390x"}, nodeArch: "s390x", want: []string{"s390x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fc := newFakeCluster(t)
			for _, n := range []*corev1.Node{archNode("n1", n1IP, tt.nodeArch), archNode("n2", n2IP, tt.nodeArch)} {
				if err := fc.cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), n, ""); err != nil {
					t.Fatal(err)
				}
			}
			var logs testutil.SyncBuffer
			b := fc.backend(func(o *Options) {
				o.Image, o.Placement.Arches = tt.image, tt.given
				o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			})
			start := time.Now()
			dep, err := b.Up(ctx, backend.Spec{Token: testToken})
			el := time.Since(start)
			if dep != nil {
				t.Cleanup(func() { _ = dep.Down(context.Background()) })
			}
			switch {
			case tt.upErr == "" && err != nil:
				t.Fatalf("Up: %v", err)
			case tt.upErr != "" && (err == nil || !strings.Contains(err.Error(), tt.upErr)):
				t.Fatalf("Up: %v, want %q", err, tt.upErr)
			}
			if !slices.Equal(b.o.Placement.Arches, tt.want) {
				t.Errorf("arches %q, want %q", b.o.Placement.Arches, tt.want)
			}
			t.Logf("log:\n%s", logs.String())
			warned := strings.Contains(logs.String(), "pass --node-arch")
			if warned != tt.warn {
				t.Errorf("fallback warning %v, want %v; log:\n%s", warned, tt.warn, logs.String())
			}
			if n := strings.Count(logs.String(), "pass --node-arch"); tt.warn && (n != 1 || !strings.Contains(logs.String(), "why=")) {
				t.Errorf("want one warning line with its reason:\n%s", logs.String())
			}
			if tt.maxWallMs > 0 && el.Milliseconds() > tt.maxWallMs {
				t.Errorf("Up took %v: the image read is not bounded", el)
			}
		})
	}
}
