// Command repeats prints chosen metrics of every repeat, one line per
// repeat, for the runs of results files whose labels match: what a
// median hides (a cell whose repeats fall in two groups) and which
// counters moved with a slow repeat. It tests nothing; docs/findings.md
// quotes its lines beside the compare that does.
//
//	go run ./hack/repeats -where test=tcp_crr -by service_proxy,services \
//	    -metrics trans_per_sec,k8s_pods_paws_timewait_rejects a.json.gz b.json.gz
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cnibench/cnibench/pkg/result"
)

func main() {
	where := flag.String("where", "", "comma-separated LABEL=VALUE a run must have (empty: every run)")
	by := flag.String("by", "", "comma-separated labels that name a run on its lines")
	metrics := flag.String("metrics", "", "comma-separated metrics to print per repeat (required)")
	flag.Parse()
	if err := run(os.Stdout, *where, *by, *metrics, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "repeats:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, where, by, metrics string, files []string) error {
	if metrics == "" || len(files) == 0 {
		return errors.New("usage: repeats [-where L=V,...] [-by L,...] -metrics M,... RESULTS...")
	}
	want := map[string]string{}
	for _, kv := range split(where) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-where %q: want LABEL=VALUE", kv)
		}
		want[k] = v
	}
	names, ms := split(by), split(metrics)
	fmt.Fprintf(w, "%s\trepeat\t%s\n", strings.Join(names, "\t"), strings.Join(ms, "\t"))
	for _, f := range files {
		set, err := result.ReadFile(f)
		if err != nil {
			return err
		}
	runs:
		for _, r := range set.Runs {
			for k, v := range want {
				if r.Labels[k] != v {
					continue runs
				}
			}
			id := make([]string, len(names))
			for i, n := range names {
				id[i] = r.Labels[n]
			}
			for i, rep := range r.Repeats {
				vals := make([]string, len(ms))
				for j, m := range ms {
					v, ok := rep.Metrics[m]
					switch {
					case rep.Error != "":
						vals[j] = "failed"
					case !ok:
						vals[j] = "—"
					default:
						vals[j] = result.Format(m, v)
					}
				}
				fmt.Fprintf(w, "%s\t%d\t%s\n", strings.Join(id, "\t"), i+1, strings.Join(vals, "\t"))
			}
		}
	}
	return nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
