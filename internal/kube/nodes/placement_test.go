package nodes

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParsePlacement(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ZonePolicy
		err  string
	}{
		{"", ZoneSame, ""},
		{"same-zone", ZoneSame, ""},
		{" cross-zone ", ZoneCross, ""},
		{"any", ZoneAny, ""},
		{"same", "", `--placement "same": unknown policy; use same-zone, cross-zone or any`},
		{"Any", "", `--placement "Any"`},
	} {
		got, err := ParsePlacement(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParsePlacement(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePlacement(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseTolerations(t *testing.T) {
	exists := corev1.TolerationOpExists
	equal := corev1.TolerationOpEqual
	for _, tt := range []struct {
		in   string
		want []corev1.Toleration
		err  string
	}{
		{in: ""},
		{in: " "},
		{in: "dedicated=bench:NoSchedule", want: []corev1.Toleration{{Key: "dedicated", Operator: equal, Value: "bench", Effect: corev1.TaintEffectNoSchedule}}},
		{in: "gpu:NoExecute,spot", want: []corev1.Toleration{
			{Key: "gpu", Operator: exists, Effect: corev1.TaintEffectNoExecute},
			{Key: "spot", Operator: exists}}},
		{in: "node.kubernetes.io/pool=bench, example.com/x:PreferNoSchedule", want: []corev1.Toleration{
			{Key: "node.kubernetes.io/pool", Operator: equal, Value: "bench"},
			{Key: "example.com/x", Operator: exists, Effect: corev1.TaintEffectPreferNoSchedule}}},
		{in: "k=:NoSchedule", want: []corev1.Toleration{{Key: "k", Operator: equal, Effect: corev1.TaintEffectNoSchedule}}},
		{in: "k:noschedule", err: `--tolerations "k:noschedule": effect "noschedule" of "k:noschedule" is not NoSchedule, PreferNoSchedule or NoExecute; the syntax is key[=value]`},
		{in: "a,,b", err: `--tolerations "a,,b": empty item`},
		{in: "=v:NoSchedule", err: `--tolerations "=v:NoSchedule": key "" of "=v:NoSchedule"`},
		{in: "bad key", err: `key "bad key"`},
		{in: "k=bad value", err: `value "bad value"`},
	} {
		got, err := ParseTolerations(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseTolerations(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseTolerations(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			continue
		}
		// Round trip.
		back, err := ParseTolerations(FormatTolerations(got))
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("ParseTolerations(FormatTolerations(%q)) = %+v, %v", tt.in, back, err)
		}
	}
}

func TestUntolerated(t *testing.T) {
	n := node("w1", taintKV("a", "1", corev1.TaintEffectNoSchedule), taintKV("b", "", corev1.TaintEffectNoExecute),
		taintKV("c", "", corev1.TaintEffectPreferNoSchedule))
	mustParse := func(s string) []corev1.Toleration {
		ts, err := ParseTolerations(s)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for _, tt := range []struct {
		tols      string
		want      string
		noExecute bool
	}{
		{"", "a=1:NoSchedule,b:NoExecute", true},
		{"a", "b:NoExecute", true},
		{"a=2", "a=1:NoSchedule,b:NoExecute", true},
		{"a=1:NoExecute,b:NoExecute", "a=1:NoSchedule", false},
		{"a=1:NoSchedule,b", "", false},
	} {
		got, ne := untolerated(n, mustParse(tt.tols))
		if strings.Join(got, ",") != tt.want || ne != tt.noExecute {
			t.Errorf("untolerated with %q = %v, %v; want %q, %v", tt.tols, got, ne, tt.want, tt.noExecute)
		}
	}
}

// FormatTolerations is the inverse of ParseTolerations (tolerations it cannot express are written Go-style).
func FormatTolerations(ts []corev1.Toleration) string {
	var parts []string
	for _, t := range ts {
		s := t.Key
		switch t.Operator {
		case corev1.TolerationOpExists:
		case "", corev1.TolerationOpEqual:
			s += "=" + t.Value
		default:
			s += string(t.Operator) + t.Value
		}
		if t.Effect != "" {
			s += ":" + string(t.Effect)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}
