package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	helloOnce sync.Once
	helloDir  string
	helloPath string
	helloErr  error
)

// StaticHello returns the path of a tiny statically linked hello-world
// binary (CGO_ENABLED=0), built once per test process; it skips the test
// when there is no go command. The package's TestMain removes it with
// RemoveStaticHello.
func StaticHello(t testing.TB) string {
	t.Helper()
	helloOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			helloErr = err
			return
		}
		if helloDir, helloErr = os.MkdirTemp("", "cnibench-static-hello-"); helloErr != nil {
			return
		}
		src := filepath.Join(helloDir, "main.go")
		if helloErr = os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); helloErr != nil {
			return
		}
		helloPath = filepath.Join(helloDir, "hello")
		cmd := exec.Command(gobin, "build", "-trimpath", "-o", helloPath, src)
		cmd.Dir = helloDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOWORK=off", "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			helloErr = err
			helloPath = string(out)
		}
	})
	if helloErr != nil {
		if _, ok := helloErr.(*exec.Error); ok {
			t.Skipf("no go command to build a static test binary: %v", helloErr)
		}
		t.Fatalf("building a static test binary: %v\n%s", helloErr, helloPath)
	}
	return helloPath
}

// RemoveStaticHello removes what StaticHello built (call it from TestMain
// after m.Run).
func RemoveStaticHello() {
	if helloDir != "" {
		os.RemoveAll(helloDir)
	}
}
