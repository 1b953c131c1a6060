package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: alpha
  cluster: {server: "https://alpha.example:6443"}
- name: beta
  cluster: {server: "https://beta.example:6443"}
users:
- name: u
  user: {token: secret}
contexts:
- name: a
  context: {cluster: alpha, user: u}
- name: b
  context: {cluster: beta, user: u}
current-context: a
`

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(p, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// isolate keeps the user's and the machine's kubeconfig out of a test.
func isolate(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
}

func TestLoadConfig(t *testing.T) {
	isolate(t)
	p := writeKubeconfig(t)
	for _, tt := range []struct {
		name, path, env, context string
		host, cluster            string
	}{
		{name: "explicit current", path: p, host: "https://alpha.example:6443", cluster: "alpha"},
		{name: "explicit context", path: p, context: "b", host: "https://beta.example:6443", cluster: "beta"},
		{name: "env", env: p, host: "https://alpha.example:6443", cluster: "alpha"},
		{name: "explicit wins over env", path: p, env: "/nonexistent", context: "b", host: "https://beta.example:6443", cluster: "beta"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			cfg, err := LoadConfig(tt.path, tt.context)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.host || cfg.BearerToken != "secret" || cfg.QPS != 50 || cfg.UserAgent != "cnibench" {
				t.Errorf("got host %q token %q qps %v agent %q", cfg.Host, cfg.BearerToken, cfg.QPS, cfg.UserAgent)
			}
			if got := ClusterName(tt.path, tt.context); got != tt.cluster {
				t.Errorf("ClusterName = %q, want %q", got, tt.cluster)
			}
			if _, err := NewClient(cfg); err != nil {
				t.Errorf("NewClient: %v", err)
			}
			if _, err := NewMetricsClient(cfg); err != nil {
				t.Errorf("NewMetricsClient: %v", err)
			}
		})
	}
}

func TestLoadConfigErrors(t *testing.T) {
	isolate(t)
	p := writeKubeconfig(t)
	if _, err := LoadConfig(p, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown context: err = %v", err)
	}
	if got := ClusterName(p, "nope"); got != "" {
		t.Errorf("ClusterName(unknown context) = %q", got)
	}
	_, err := LoadConfig("", "")
	if err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("no config: err = %v", err)
	}
	if got := ClusterName("", ""); got != "" {
		t.Errorf("ClusterName(no config) = %q", got)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("missing explicit file: no error")
	}
}
