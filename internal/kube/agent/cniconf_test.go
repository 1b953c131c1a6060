package agent

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func TestParseCNIConf(t *testing.T) {
	for _, c := range []struct {
		name, file, data string
		want             CNIFile // Error: a substring
	}{
		{"bridge conflist", "10-bridge.conflist",
			`{"cniVersion":"0.4.0","name":"x","plugins":[{"type":"bridge","bridge":"cni0","mtu":1450},{"type":"portmap"}]}`,
			CNIFile{NetworkName: "x", CNIVersion: "0.4.0", Plugins: []string{"bridge", "portmap"}, MTU: 1450, Valid: true}},
		{"single conf", "10-ptp.conf", `{"cniVersion":"1.0.0","name":"n","type":"ptp","mtu":9000}`,
			CNIFile{NetworkName: "n", CNIVersion: "1.0.0", Plugins: []string{"ptp"}, MTU: 9000, Valid: true}},
		{".json is a single conf", "10-x.json", `{"name":"n","type":"macvlan"}`,
			CNIFile{NetworkName: "n", Plugins: []string{"macvlan"}, Valid: true}},
		{"mtu only of the main plugin", "a.conflist", `{"name":"x","plugins":[{"type":"cilium-cni"},{"type":"tuning","mtu":1300}]}`,
			CNIFile{NetworkName: "x", Plugins: []string{"cilium-cni", "tuning"}, Valid: true}},
		{"mtu not a whole number", "a.conf", `{"name":"x","type":"bridge","mtu":1450.5}`,
			CNIFile{NetworkName: "x", Plugins: []string{"bridge"}, Valid: true}},
		{"mtu a string", "a.conf", `{"name":"x","type":"bridge","mtu":"1450"}`,
			CNIFile{NetworkName: "x", Plugins: []string{"bridge"}, Valid: true}},
		{"invalid JSON", "a.conflist", `{"name":"x","plugins":[`,
			CNIFile{Plugins: []string{}, Error: "unexpected end of JSON input"}},
		{"not an object", "a.conflist", `[1,2]`, CNIFile{Plugins: []string{}, Error: "cannot unmarshal array"}},
		{"null list", "a.conflist", `null`, CNIFile{Plugins: []string{}, Error: `no "name"`}},
		{"null conf", "a.conf", `null`, CNIFile{Plugins: []string{}, Error: `missing "type"`}},
		{"name not a string", "a.conflist", `{"name":null,"plugins":[{"type":"bridge"}]}`,
			CNIFile{Plugins: []string{}, Error: `"name" is null`}},
		{"cniVersion not a string", "a.conflist", `{"name":"x","cniVersion":1,"plugins":[{"type":"bridge"}]}`,
			CNIFile{Plugins: []string{}, Error: `"cniVersion" is 1`}},
		{"no plugins key", "a.conflist", `{"name":"x"}`, CNIFile{NetworkName: "x", Plugins: []string{}, Error: `no "plugins"`}},
		{"plugins not a list", "a.conflist", `{"name":"x","plugins":{}}`,
			CNIFile{NetworkName: "x", Plugins: []string{}, Error: "not a list"}},
		{"empty plugins", "a.conflist", `{"name":"x","plugins":[]}`,
			CNIFile{NetworkName: "x", Plugins: []string{}, Error: "no plugins"}},
		{"plugin without type", "a.conflist", `{"name":"x","plugins":[{"type":"bridge"},{"mtu":1}]}`,
			CNIFile{NetworkName: "x", Plugins: []string{"bridge"}, Error: `plugin 1: missing "type"`}},
		{"type not a string", "a.conf", `{"name":"x","type":7}`, CNIFile{Plugins: []string{}, Error: "cannot unmarshal number"}},
		{"capabilities of the wrong type", "a.conflist", `{"name":"x","plugins":[{"type":"portmap","capabilities":{"portMappings":"yes"}}]}`,
			CNIFile{NetworkName: "x", Plugins: []string{}, Error: "plugin 0"}},
		{"a list in a .conf", "a.conf", `{"name":"x","plugins":[{"type":"bridge"}]}`,
			CNIFile{NetworkName: "x", Plugins: []string{}, Error: ".conflist"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ParseCNIConf(c.file, []byte(c.data))
			want := c.want
			want.Name = c.file
			if want.Error == "" {
				want.Valid = true
			}
			if got.Error != "" && want.Error != "" && strings.Contains(got.Error, want.Error) {
				want.Error = got.Error
			}
			if !cniFileEqual(got, want) {
				t.Errorf("ParseCNIConf(%s):\n got %+v\nwant %+v", c.data, got, want)
			}
		})
	}
}

func cniFileEqual(a, b CNIFile) bool {
	return a.Name == b.Name && a.NetworkName == b.NetworkName && a.CNIVersion == b.CNIVersion &&
		slices.Equal(a.Plugins, b.Plugins) && a.Plugins != nil && a.MTU == b.MTU && a.Valid == b.Valid && a.Error == b.Error
}

// TestReadCNIConfDirGolden reads the directories under testdata/cni and
// compares the JSON with testdata/cni/<dir>.golden.json (-update rewrites
// them).
func TestReadCNIConfDirGolden(t *testing.T) {
	for _, dir := range []string{"bridge", "single", "invalid-first", "none-valid", "missing"} {
		t.Run(dir, func(t *testing.T) {
			c := ReadCNIConfDir(filepath.Join("testdata", "cni", dir))
			got, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "cni", dir+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (run with -update to accept):\n%s", golden, got)
			}
		})
	}
}

func TestReadCNIConfDirInUse(t *testing.T) {
	for _, c := range []struct {
		dir, inUse string
		plugins    []string
		mtu        int
		err        string
	}{
		{"bridge", "10-bridge.conflist", []string{"bridge", "portmap"}, 1450, ""},
		{"single", "10-ptp.conf", []string{"ptp"}, 1400, ""},
		{"invalid-first", "10-calico.conflist", []string{"calico", "portmap", "bandwidth"}, 1440, ""},
		{"none-valid", "", []string{}, 0, "no valid CNI configuration"},
		{"missing", "", []string{}, 0, "no such file or directory"},
	} {
		got := ReadCNIConfDir(filepath.Join("testdata", "cni", c.dir))
		if got.Schema != SchemaCNIConf || got.InUse != c.inUse || !slices.Equal(got.PluginsInUse, c.plugins) ||
			got.MTU != c.mtu || !strings.Contains(got.Error, c.err) || (c.err == "") != (got.Error == "") {
			t.Errorf("%s: got in_use %q plugins %v mtu %d error %q; want %q %v %d %q",
				c.dir, got.InUse, got.PluginsInUse, got.MTU, got.Error, c.inUse, c.plugins, c.mtu, c.err)
		}
	}
	// An empty directory: no file, no configuration in use.
	dir := t.TempDir()
	got := ReadCNIConfDir(dir)
	if len(got.Files) != 0 || got.InUse != "" || !strings.Contains(got.Error, "no valid CNI configuration") {
		t.Errorf("empty dir: %+v", got)
	}
	// The files are in name order whatever the order of creation, and an
	// unreadable one is listed as invalid.
	for _, n := range []string{"b.conf", "a.conf"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(`{"name":"`+n+`","type":"bridge"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "0.conflist")); err != nil {
		t.Fatal(err)
	}
	got = ReadCNIConfDir(dir)
	var names []string
	for _, f := range got.Files {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"0.conflist", "a.conf", "b.conf"}) || got.InUse != "a.conf" ||
		got.Files[0].Valid || got.Files[0].Error == "" {
		t.Errorf("got files %v in use %q, first %+v", names, got.InUse, got.Files[0])
	}
}

// FuzzParseCNIConf: ParseCNIConf never panics, is valid exactly when it
// has no error, always lists plugins (never null), and a valid file has
// at least one plugin, none with an empty type, and an MTU in range.
func FuzzParseCNIConf(f *testing.F) {
	entries, _ := filepath.Glob(filepath.Join("testdata", "cni", "*", "*"))
	for _, e := range entries {
		if b, err := os.ReadFile(e); err == nil {
			f.Add(filepath.Base(e), b)
		}
	}
	f.Add("x.conflist", []byte(`{"name":"x","plugins":[{"type":"a","mtu":1e3},{"type":"b"}]}`))
	f.Add("x.conf", []byte(`{"name":"x","type":"a","mtu":-1}`))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		got := ParseCNIConf(name, data)
		if got.Name != name || got.Plugins == nil || got.Valid != (got.Error == "") {
			t.Fatalf("ParseCNIConf(%q, %q) = %+v", name, data, got)
		}
		if got.MTU < 0 || got.MTU > 65535 {
			t.Fatalf("MTU %d out of range", got.MTU)
		}
		if got.Valid {
			if len(got.Plugins) == 0 || slices.Contains(got.Plugins, "") {
				t.Fatalf("valid with plugins %q", got.Plugins)
			}
			if !strings.HasSuffix(name, ".conflist") && len(got.Plugins) != 1 {
				t.Fatalf("a single configuration with plugins %q", got.Plugins)
			}
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatal(err)
		}
	})
}
