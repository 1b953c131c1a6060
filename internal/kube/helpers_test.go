package kube

import (
	"flag"
	"os"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	pollInterval = 5 * time.Millisecond
	defaultRetry = RetryPolicy{CallTimeout: 5 * time.Second, Attempts: 3, Backoff: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	os.Exit(m.Run())
}
