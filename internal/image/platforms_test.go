package image

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Platforms reads what was pushed, with the push's credentials: an index's
// platforms, a single image's; it fails, bounded, where the image cannot
// be read.
func TestPlatforms(t *testing.T) {
	amd, arm := twoPlatforms(t)
	idx, err := BuildIndex([]Binary{{Path: amd}, {Path: arm}}, "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	single, err := Build(Options{Binary: arm, Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	host := authRegistry(t)
	ctx := context.Background()
	dockerConfig(t, host, "user:pass")
	if _, err := PushIndex(ctx, idx.Index, host+"/team/cnibench:multi", PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Push(ctx, single, host+"/team/cnibench:arm64", PushOptions{}); err != nil {
		t.Fatal(err)
	}

	str := func(ps []v1.Platform) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.String())
		}
		return strings.Join(s, ",")
	}
	for ref, want := range map[string]string{
		host + "/team/cnibench:multi": "linux/amd64,linux/arm64",
		host + "/team/cnibench:arm64": "linux/arm64",
	} {
		got, err := Platforms(ctx, ref, 0)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if str(got) != want {
			t.Errorf("%s: platforms %s, want %s", ref, str(got), want)
		}
	}

	// Wrong credentials, an absent tag, the .local domain: errors, the
	// last without a request.
	dockerConfig(t, host, "user:wrong")
	if _, err := Platforms(ctx, host+"/team/cnibench:multi", 0); err == nil || !strings.Contains(err.Error(), "reading "+host) {
		t.Errorf("wrong credentials: %v", err)
	}
	dockerConfig(t, host, "user:pass")
	if _, err := Platforms(ctx, host+"/team/cnibench:absent", 0); err == nil {
		t.Error("absent tag: no error")
	}
	if _, err := Platforms(ctx, DefaultRef(), 0); !errors.Is(err, ErrNotInRegistry) {
		t.Errorf("%s: %v, want ErrNotInRegistry", DefaultRef(), err)
	}
	if _, err := Platforms(ctx, "Not A Ref", 0); err == nil {
		t.Error("bad reference: no error")
	}

	// A registry that never answers: the timeout bounds the read.
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(stall.Close)
	start := time.Now()
	_, err = Platforms(ctx, strings.TrimPrefix(stall.URL, "http://")+"/x/cnibench:1", 200*time.Millisecond)
	if el := time.Since(start); err == nil || el > 2*time.Second {
		t.Errorf("stalled registry: %v after %v, want an error within the 200ms bound", err, el)
	}
}

func TestLinuxArches(t *testing.T) {
	ps := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "windows", Architecture: "amd64"}, {OS: "linux", Architecture: "arm", Variant: "v7"},
		{OS: "linux", Architecture: "arm", Variant: "v6"}, {Architecture: "arm64"}}
	if got := LinuxArches(ps); !slices.Equal(got, []string{"amd64", "arm", "arm64"}) {
		t.Errorf("LinuxArches = %q", got)
	}
	if got := LinuxArches(nil); got != nil {
		t.Errorf("LinuxArches(nil) = %q", got)
	}
}
