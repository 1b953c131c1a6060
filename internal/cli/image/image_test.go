package imagecmd

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/clitest"
	"github.com/cnibench/cnibench/internal/image"
	"github.com/cnibench/cnibench/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveStaticHello()
	os.Exit(code)
}

// staticBinary returns the path of a tiny statically linked binary.
func staticBinary(t *testing.T) string { return testutil.StaticHello(t) }

func TestValidate(t *testing.T) {
	def := image.DefaultRef()
	tests := []struct {
		name string
		f    flagpole
		want string // usage error substring; "" = valid
	}{
		{"out", flagpole{Ref: def, Out: "x.tar"}, ""},
		{"push", flagpole{Ref: "registry.example:5000/cnibench:dev", Push: true}, ""},
		{"push insecure", flagpole{Ref: "registry.example:5000/cnibench:dev", Push: true, Insecure: true}, ""},
		{"push digest", flagpole{Ref: "registry.example/cnibench@sha256:" + strings.Repeat("a", 64), Push: true}, ""},
		{"neither", flagpole{Ref: def}, "--out FILE.tar or --push: pass one"},
		{"both", flagpole{Ref: def, Out: "x.tar", Push: true}, "--out and --push: pass only one"},
		{"insecure without push", flagpole{Ref: def, Out: "x.tar", Insecure: true}, "--insecure: only with --push"},
		{"empty ref", flagpole{Out: "x.tar"}, "--ref: must not be empty"},
		{"bad ref", flagpole{Ref: "Not A Ref", Out: "x.tar"}, `--ref "Not A Ref"`},
		{"digest tarball", flagpole{Ref: "cnibench.local/cnibench@sha256:" + strings.Repeat("a", 64), Out: "x.tar"}, "a tarball needs a tag"},
	}
	for _, tc := range tests {
		_, _, err := tc.f.validate()
		var ue *clierr.UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want a usage error containing %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: error is not one line: %q", tc.name, err)
		}
	}
}

func TestBuildCommandUsage(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build"}, "--out FILE.tar or --push"},
		{[]string{"build", "--out", filepath.Join(dir, "a.tar"), "--push"}, "pass only one"},
		{[]string{"build", "--out", filepath.Join(dir, "a.tar"), "--insecure"}, "--insecure: only with --push"},
		{[]string{"build", "--out", filepath.Join(dir, "a.tar"), "--binary", script}, "--binary " + script + ": " + script + ": not an ELF executable"},
		{[]string{"build", "--out", filepath.Join(dir, "a.tar"), "--binary", filepath.Join(dir, "missing")}, "--binary " + filepath.Join(dir, "missing") + ": "},
		{[]string{"build", "--bogus"}, "unknown flag: --bogus"},
	} {
		stdout, stderr, code := clitest.Execute(t, NewCommand, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("image %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the refused runs left %d files, want only the script", len(ents))
	}
}

func TestBuildWritesTarball(t *testing.T) {
	bin := staticBinary(t)
	out := filepath.Join(t.TempDir(), "cnibench.tar")
	ref := "cnibench.local/cnibench:test"
	stdout, stderr, code := clitest.Execute(t, NewCommand, "build", "--binary", bin, "--ref", ref, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`^linux/\S+ +sha256:[0-9a-f]{64}  \S+\nwrote (\S+) \((sha256:[0-9a-f]{64})\) to (\S+)\n$`).FindStringSubmatch(stdout)
	if m == nil || m[1] != ref || m[3] != out {
		t.Fatalf("stdout %q, want the platform line and 'wrote %s (sha256:...) to %s'", stdout, ref, out)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != m[2] {
		t.Errorf("tarball holds %s, stdout says %s", d, m[2])
	}
	want, err := image.Build(image.Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if wd, _ := want.Digest(); wd != d {
		t.Errorf("tarball holds %s, image.Build gives %s", d, wd)
	}
}
