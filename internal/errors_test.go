package internal

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneErrNotSupported walks the module's Go files and fails on a
// second definition of ErrNotSupported: every other package re-exports
// this one (ErrNotSupported = internal.ErrNotSupported), so errors.Is
// matches across floors.
func TestOneErrNotSupported(t *testing.T) {
	def := regexp.MustCompile(`ErrNotSupported\s*=\s*(errors\.New|fmt\.Errorf)`)
	reexport := regexp.MustCompile(`ErrNotSupported\s*=\s*(internal|backend)\.ErrNotSupported\b`)
	root := ".."
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == filepath.Join(root, "internal", "errors.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if def.Match(b) {
			t.Errorf("%s defines its own ErrNotSupported: re-export internal.ErrNotSupported instead", path)
		}
		if reexport.Match(b) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("no package re-exports internal.ErrNotSupported: the walk found nothing (wrong root?)")
	}
}
