package labtest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/lab"
	"github.com/cnibench/cnibench/internal/testutil"
)

// Logger is a debug-level logger that writes to t's log.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Up brings a lab up (skipping the test unless it runs as root) and
// registers its teardown, checking that nothing of the run is left
// afterwards.
func Up(t *testing.T, opts lab.Options) *lab.Lab {
	t.Helper()
	testutil.SkipUnlessRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := lab.New(Logger(t))
	if err := l.Up(ctx, opts); err != nil {
		t.Fatalf("lab up: %v", err)
	}
	runID := l.RunID()
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("lab down: %v", err)
		}
		AssertNothingLeft(t, runID)
	})
	return l
}

// AssertNothingLeft checks that run runID left no namespace and no state
// file.
func AssertNothingLeft(t *testing.T, runID string) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(lab.NetnsDir, lab.Prefix+runID+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) > 0 {
		t.Errorf("run %s left namespaces: %v", runID, matches)
	}
	if _, err := os.Stat(lab.StatePath(runID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run %s left its state file %s (stat: %v)", runID, lab.StatePath(runID), err)
	}
}
