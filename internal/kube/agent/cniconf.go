package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CNIConf is what a node's CNI configuration directory holds
// (`agent cni-conf`).
type CNIConf struct {
	Schema string `json:"schema"`
	Dir    string `json:"dir"`
	// Files are the configuration files, sorted by name, as the runtime
	// loads them: *.conf, *.conflist and *.json.
	Files []CNIFile `json:"files"`
	// InUse names the first valid file, the one the runtime uses, and
	// PluginsInUse and MTU are its plugin types and MTU.
	InUse        string   `json:"in_use"`
	PluginsInUse []string `json:"plugins_in_use"`
	MTU          int      `json:"mtu"`
	// Error says why no configuration is in use (a missing directory, no
	// valid file).
	Error string `json:"error,omitempty"`
}

// CNIFile is one configuration file.
type CNIFile struct {
	Name        string `json:"name"`
	NetworkName string `json:"network_name"`
	CNIVersion  string `json:"cni_version"`
	// Plugins are the plugins' types in chain order: the first is the
	// main plugin, the others chained (portmap, bandwidth, ...).
	Plugins []string `json:"plugins"`
	// MTU is the main plugin's "mtu" field (0 when unset or not a whole
	// number).
	MTU   int    `json:"mtu"`
	Valid bool   `json:"valid"`
	Error string `json:"error,omitempty"`
}

// CNIConfExts are the extensions of the files the runtime reads (libcni's
// ConfFiles as containerd's go-cni and CRI-O's ocicni call it).
var CNIConfExts = []string{".conf", ".conflist", ".json"}

// maxCNIConf is the largest configuration file read.
const maxCNIConf = 1 << 20

// ReadCNIConfDir reads dir the way the container runtime does: the files
// with CNIConfExts, sorted by name; the first valid one is in use. The
// choice is CRI-O's (ocicni) and the kubelet's, which skip an invalid
// file; containerd (go-cni) instead refuses to load any network when a
// file sorting before the first valid one is invalid, which a running pod
// network rules out.
func ReadCNIConfDir(dir string) CNIConf {
	c := CNIConf{Schema: SchemaCNIConf, Dir: dir, Files: []CNIFile{}, PluginsInUse: []string{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	for _, e := range ents { // sorted by name
		if e.IsDir() || !isCNIConfName(e.Name()) {
			continue
		}
		data, err := readLimited(filepath.Join(dir, e.Name()), maxCNIConf)
		var f CNIFile
		if err != nil {
			f = CNIFile{Name: e.Name(), Plugins: []string{}, Error: err.Error()}
		} else {
			f = ParseCNIConf(e.Name(), data)
		}
		c.Files = append(c.Files, f)
		if f.Valid && c.InUse == "" {
			c.InUse, c.PluginsInUse, c.MTU = f.Name, f.Plugins, f.MTU
		}
	}
	if c.InUse == "" {
		c.Error = fmt.Sprintf("no valid CNI configuration (%s) in %s", strings.Join(CNIConfExts, ", "), dir)
	}
	return c
}

func isCNIConfName(name string) bool {
	ext := filepath.Ext(name)
	for _, x := range CNIConfExts {
		if ext == x {
			return true
		}
	}
	return false
}

// readLimited reads a file of at most max bytes.
func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, nil
}

// netConf is the part of a plugin's configuration that libcni decodes
// (types.NetConf): a value of the wrong type makes the file invalid there
// too. MTU is not libcni's: the main plugins that take one (bridge, ptp,
// Calico, ...) call it "mtu".
type netConf struct {
	CNIVersion   string          `json:"cniVersion"`
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	IPAM         struct {
		Type string `json:"type"`
	} `json:"ipam"`
	DNS struct {
		Nameservers []string `json:"nameservers"`
		Domain      string   `json:"domain"`
		Search      []string `json:"search"`
		Options     []string `json:"options"`
	} `json:"dns"`
	PrevResult map[string]any  `json:"prevResult"`
	MTU        json.RawMessage `json:"mtu"`
}

// ParseCNIConf parses one configuration file as libcni does: a name ending
// in .conflist is a list ({"name", "cniVersion", "plugins": [...]}, each
// plugin with a "type"), any other a single plugin with a "type". It never
// fails: an invalid file is returned with Valid false and Error set, and
// with what could be read.
func ParseCNIConf(name string, data []byte) CNIFile {
	f := CNIFile{Name: name, Plugins: []string{}}
	var err error
	if strings.HasSuffix(name, ".conflist") {
		err = parseConfList(&f, data)
	} else {
		err = parseConf(&f, data)
	}
	if err != nil {
		f.Error = err.Error()
	}
	f.Valid = err == nil
	return f
}

func parseConf(f *CNIFile, data []byte) error {
	var nc netConf
	if err := json.Unmarshal(data, &nc); err != nil {
		return fmt.Errorf("parse configuration: %w", err)
	}
	f.NetworkName, f.CNIVersion = nc.Name, nc.CNIVersion
	if nc.Type == "" {
		if strings.Contains(string(data), `"plugins"`) {
			return errors.New(`parse configuration: missing "type" (a list of plugins belongs in a .conflist file)`)
		}
		return errors.New(`parse configuration: missing "type"`)
	}
	f.Plugins = append(f.Plugins, nc.Type)
	f.MTU = mtuOf(nc.MTU)
	return nil
}

func parseConfList(f *CNIFile, data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("parse configuration list: %w", err)
	}
	if v, ok := raw["cniVersion"]; ok {
		if f.CNIVersion, ok = rawString(v); !ok {
			return fmt.Errorf(`parse configuration list: "cniVersion" is %.40s, not a string`, v)
		}
	}
	v, ok := raw["name"]
	if !ok {
		return errors.New(`parse configuration list: no "name"`)
	}
	if f.NetworkName, ok = rawString(v); !ok {
		return fmt.Errorf(`parse configuration list: "name" is %.40s, not a string`, v)
	}
	v, ok = raw["plugins"]
	if !ok {
		return errors.New(`parse configuration list: no "plugins"`)
	}
	var plugins []json.RawMessage
	if err := json.Unmarshal(v, &plugins); err != nil || plugins == nil {
		return fmt.Errorf(`parse configuration list: "plugins" is %.40s, not a list`, v)
	}
	if len(plugins) == 0 {
		return errors.New("parse configuration list: no plugins in the list")
	}
	for i, p := range plugins {
		var nc netConf
		if err := json.Unmarshal(p, &nc); err != nil {
			return fmt.Errorf("parse configuration list: plugin %d: %w", i, err)
		}
		if nc.Type == "" {
			return fmt.Errorf(`parse configuration list: plugin %d: missing "type"`, i)
		}
		f.Plugins = append(f.Plugins, nc.Type)
		if i == 0 {
			f.MTU = mtuOf(nc.MTU)
		}
	}
	return nil
}

// rawString decodes a JSON string (not null).
func rawString(v json.RawMessage) (string, bool) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// mtuOf is an "mtu" value that is a JSON number, whole and between 0 and
// 65535 (a string, such as Calico's unrendered "__CNI_MTU__", is not:
// the plugins decode "mtu" as an integer), or 0.
func mtuOf(raw json.RawMessage) int {
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0
	}
	v, err := n.Int64()
	if err != nil || v < 0 || v > 65535 {
		return 0
	}
	return int(v)
}
