package apps

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cnibench/cnibench/internal/scenario"
	"github.com/cnibench/cnibench/internal/scenario/encrypt"
)

// encryptLabel is the encryption scenario's encryption label, which the
// points crossed with its tunnels carry.
const encryptLabel = encrypt.LabelEncryption

// EncryptFamilies are the encryption families of --app-encrypt (the encryption scenario's
// families; none always runs beside them).
var EncryptFamilies = encrypt.Families

// newEncrypt validates the --app-encrypt families and builds the
// encryption scenario whose tunnels the applications run through; nil
// when none is asked for ("none" alone, or nothing).
func newEncrypt(families []string) (*encrypt.Scenario, error) {
	var fs []string
	for _, f := range families {
		f = strings.TrimSpace(f)
		switch {
		case f == encrypt.None:
		case !slices.Contains(EncryptFamilies, f):
			return nil, fmt.Errorf("--app-encrypt %q: must be among none, %s", f, strings.Join(EncryptFamilies, ", "))
		case slices.Contains(fs, f):
			return nil, fmt.Errorf("--app-encrypt %q: given twice", f)
		default:
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil, nil
	}
	e, err := encrypt.New(encrypt.Options{Families: fs})
	if err != nil {
		return nil, fmt.Errorf("--app-encrypt: %w", err)
	}
	return e, nil
}

// encryptPoints are the encryption scenario's points the applications
// cross: none and every mode with the pods' MTU lowered by the tunnel's
// overhead (the right configuration; the wire-MTU misconfiguration is the
// encryption scenario's own subject).
func (s *Scenario) encryptPoints() []scenario.Point {
	if s.enc == nil {
		return nil
	}
	var out []scenario.Point
	for _, p := range s.enc.Points() {
		if p.Labels[encrypt.LabelEncryption] == encrypt.None || p.Labels[encrypt.LabelPodMTU] == encrypt.MTULowered {
			out = append(out, p)
		}
	}
	return out
}

// crossEncrypt crosses an application's point with every encryption
// point: the labels of both (the scenario label stays apps), skipped when
// either is.
func crossEncrypt(app scenario.Point, encs []scenario.Point) []scenario.Point {
	out := make([]scenario.Point, 0, len(encs))
	for _, e := range encs {
		l := maps.Clone(app.Labels)
		for _, k := range []string{encrypt.LabelEncryption, encrypt.LabelCipher, encrypt.LabelPodMTU} {
			l[k] = e.Labels[k]
		}
		skip := app.Skip
		if skip == nil && e.Skip != nil {
			skip = fmt.Errorf("%s: %w", e.Labels[encrypt.LabelEncryption], e.Skip)
		}
		out = append(out, scenario.Point{Labels: l, Skip: skip})
	}
	return out
}

// encrypted tells whether a point runs through the encryption scenario's
// tunnels (it carries their labels).
func encrypted(p scenario.Point) bool {
	_, ok := p.Labels[encrypt.LabelEncryption]
	return ok
}
