package reportcmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cnibench/cnibench/internal/cli/clierr"
	"github.com/cnibench/cnibench/internal/cli/streams"
	"github.com/cnibench/cnibench/internal/report"
	"github.com/cnibench/cnibench/internal/report/field"
	"github.com/cnibench/cnibench/pkg/result"
)

// runField renders several results files, one per CNI configuration, side
// by side (internal/report/field).
func runField(s streams.IOStreams, f *flags, args []string) error {
	format, err := outputFormat(f)
	if err != nil {
		return err
	}
	var inputs []field.Input
	for _, arg := range args {
		path, err := resultsPath(arg)
		if err != nil {
			return err
		}
		set, err := result.ReadFile(path)
		if err != nil {
			return err
		}
		if err := report.CheckSize(path, set); err != nil {
			return err
		}
		inputs = append(inputs, field.Input{Name: path, Set: set})
	}
	fd, err := field.New(inputs)
	var fe *field.Error
	if errors.As(err, &fe) {
		// Input a field report cannot take (no cni label, two files of one
		// configuration): the arguments are wrong, exit 2.
		return clierr.Usagef("%s", fe.Msg)
	}
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	switch format {
	case "html":
		err = field.HTML(&buf, fd)
	case "md":
		err = field.Markdown(&buf, fd)
	default:
		err = field.Text(&buf, fd, f.output == "" && useColor(s.Out))
	}
	if err != nil {
		return fmt.Errorf("render the field report: %w", err)
	}
	return writeOut(s, f, &buf)
}

// resultsPath is the results file an argument names: the file itself, or
// a directory's results.json (results.json.gz, as committed data is kept).
func resultsPath(arg string) (string, error) {
	st, err := os.Stat(arg)
	if err != nil || !st.IsDir() {
		return arg, nil // ReadFile says what is wrong with it
	}
	for _, name := range []string{"results.json", "results.json.gz"} {
		p := filepath.Join(arg, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: a directory without results.json or results.json.gz", arg)
}
