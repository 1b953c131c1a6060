package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run that could not keep what it measures is refused before the
// backend is even opened.
func TestOutDirCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(o *Options)
		want string
	}{
		{"out under a file", func(o *Options) { o.OutDir = filepath.Join(file, "out") }, "--out " + filepath.Join(file, "out")},
		{"profiles where a file is", func(o *Options) {
			o.OutDir = filepath.Join(dir, "run")
			if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(o.OutDir, ProfileDir), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			o.CPUProfile = &CPUProfile{}
		}, "--cpu-profile: cannot create"},
	} {
		b := &fakeBackend{}
		o := fakeOptions(t, b)
		tc.set(&o)
		_, err := (&Runner{}).Run(context.Background(), o)
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a ValidationError with %q", tc.name, err, tc.want)
		}
		if b.opened != 0 {
			t.Errorf("%s: the backend was opened before the refusal", tc.name)
		}
	}
}
