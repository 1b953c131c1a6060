package apps

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/encrypt"
)

// --app-encrypt crosses every application with none and the encryption
// points whose pods' MTU is lowered; the points carry both scenarios'
// labels (the scenario label stays apps) and the scenario no longer runs
// on any datapath.
func TestEncryptCrossing(t *testing.T) {
	tests := []struct {
		name     string
		encrypt  []string
		wantEncs []string // encryption/cipher/pod_mtu of each app's points
	}{
		{"off", nil, nil},
		{"none alone", []string{"none"}, nil},
		{"wireguard", []string{"wireguard"}, []string{"none/none/wire", "wireguard/chacha20poly1305/lowered", "wireguard-userspace/chacha20poly1305/lowered"}},
		{"both", []string{"wireguard", "none", "ipsec"}, []string{"none/none/wire",
			"wireguard/chacha20poly1305/lowered", "wireguard-userspace/chacha20poly1305/lowered",
			"ipsec/aes-gcm-128/lowered", "ipsec/aes-cbc-hmac-sha256/lowered",
			"ipsec-userspace/aes-gcm-128/lowered", "ipsec-userspace/aes-cbc-hmac-sha256/lowered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Options{Apps: []string{HTTP, SCP}, Sizes: []string{"4KiB"}, Encrypt: tt.encrypt})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := s.AnyDatapath(), tt.wantEncs == nil; got != want {
				t.Errorf("AnyDatapath() = %v, want %v", got, want)
			}
			pts := s.Points()
			n := max(len(tt.wantEncs), 1)
			if len(pts) != 2*n {
				t.Fatalf("%d points, want %d: %v", len(pts), 2*n, pts)
			}
			for i, p := range pts {
				wantApp := []string{HTTP, SCP}[i/n]
				if p.Labels[scenario.LabelScenario] != ScenarioName || p.Labels[LabelApp] != wantApp {
					t.Errorf("point %d: labels %v, want scenario apps, app %s", i, p.Labels, wantApp)
				}
				if tt.wantEncs == nil {
					if encrypted(p) || len(p.Labels) != 2 {
						t.Errorf("point %d without --app-encrypt: labels %v", i, p.Labels)
					}
					continue
				}
				got := p.Labels[encrypt.LabelEncryption] + "/" + p.Labels[encrypt.LabelCipher] + "/" + p.Labels[encrypt.LabelPodMTU]
				if !encrypted(p) || got != tt.wantEncs[i%n] || len(p.Labels) != 5 {
					t.Errorf("point %d: labels %v, want encryption point %s", i, p.Labels, tt.wantEncs[i%n])
				}
				// The cells are the application's: one size, HTTP's
				// keep-alive on and off.
				if want := map[string]int{HTTP: 2, SCP: 1}[wantApp]; len(s.Cells(p)) != want {
					t.Errorf("point %d: %d cells, want %d", i, len(s.Cells(p)), want)
				}
			}
			cfg := s.Config()
			if _, ok := cfg["apps_encryption_points"]; ok != (tt.wantEncs != nil) {
				t.Errorf("config %v", cfg)
			}
			if tt.wantEncs != nil && cfg["apps_encryption_points"] != strings.Join(tt.wantEncs, ",") {
				t.Errorf("apps_encryption_points %q, want %q", cfg["apps_encryption_points"], strings.Join(tt.wantEncs, ","))
			}
			sh := s.Shape()
			if sh.Valid() != "" || slices.Contains(sh.Categorical.Groups, encrypt.LabelEncryption) != (tt.wantEncs != nil) {
				t.Errorf("shape groups %v (%s)", sh.Categorical.Groups, sh.Valid())
			}
		})
	}
}

// A point is skipped when its application or its encryption is: the
// application's reason first, the encryption's named by its mode.
func TestCrossEncryptSkips(t *testing.T) {
	noWG := errors.New("no wireguard module")
	noApp := errors.New("nginx missing")
	encs := []scenario.Point{
		{Labels: map[string]string{scenario.LabelScenario: encrypt.ScenarioName, encrypt.LabelEncryption: encrypt.None, encrypt.LabelCipher: encrypt.None, encrypt.LabelPodMTU: encrypt.MTUWire}},
		{Labels: map[string]string{scenario.LabelScenario: encrypt.ScenarioName, encrypt.LabelEncryption: encrypt.WireGuard, encrypt.LabelCipher: encrypt.CipherChaCha, encrypt.LabelPodMTU: encrypt.MTULowered}, Skip: noWG},
	}
	app := scenario.Point{Labels: map[string]string{scenario.LabelScenario: ScenarioName, LabelApp: HTTP}}
	got := crossEncrypt(app, encs)
	if got[0].Skip != nil || !errors.Is(got[1].Skip, noWG) || !strings.HasPrefix(got[1].Skip.Error(), "wireguard: ") {
		t.Errorf("skips %v, %v", got[0].Skip, got[1].Skip)
	}
	if got[1].Labels[scenario.LabelScenario] != ScenarioName || len(app.Labels) != 2 {
		t.Errorf("labels %v (the application's point's changed: %v)", got[1].Labels, app.Labels)
	}
	app.Skip = noApp
	for _, p := range crossEncrypt(app, encs) {
		if !errors.Is(p.Skip, noApp) {
			t.Errorf("%v: skip %v, want the application's", p.Labels, p.Skip)
		}
	}
}

// Bad --app-encrypt values give one line naming the flag.
func TestEncryptFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--app-encrypt", "tls"}, `--app-encrypt "tls": must be among none, wireguard, ipsec`},
		{[]string{"--app-encrypt", "wireguard,wireguard"}, `--app-encrypt "wireguard": given twice`},
		{[]string{"--app-encrypt", "wireguard,,ipsec"}, `--app-encrypt "wireguard,,ipsec": empty element`},
	}
	reg, err := scenario.Lookup(ScenarioName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		build, err := reg.Parse(tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = build(scenario.Common{Changed: func(f string) bool { return f == "app-encrypt" }})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want %q…", tt.args, err, tt.want)
		}
	}
	build, _ := reg.Parse("--app-encrypt", "wireguard")
	sc, err := build(scenario.Common{Changed: func(f string) bool { return f == "app-encrypt" }})
	if err != nil {
		t.Fatal(err)
	}
	if sc.(scenario.AnyDatapath).AnyDatapath() {
		t.Error("--app-encrypt wireguard: the scenario still claims any datapath")
	}
}
