package flame

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// folded builds a profile from folded stacks "root;…;leaf count", one
// location per frame with one line, the leaf first as pprof orders them.
func folded(tb testing.TB, lines ...string) *profile.Profile {
	tb.Helper()
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	locs := map[string]*profile.Location{}
	for _, l := range lines {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			tb.Fatalf("folded line %q lacks a count", l)
		}
		n, err := strconv.ParseInt(l[i+1:], 10, 64)
		if err != nil {
			tb.Fatalf("folded line %q: %v", l, err)
		}
		var stack []*profile.Location
		names := strings.Split(l[:i], ";")
		for j := len(names) - 1; j >= 0; j-- {
			loc, ok := locs[names[j]]
			if !ok {
				fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: names[j]}
				p.Function = append(p.Function, fn)
				loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
				p.Location = append(p.Location, loc)
				locs[names[j]] = loc
			}
			stack = append(stack, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: []int64{n}})
	}
	return p
}

// sampleProfile is the profile of the golden files: kernel, Go, BPF and
// unknown frames under two processes, 100 samples.
func sampleProfile(tb testing.TB) *profile.Profile {
	return folded(tb,
		"comm:cnibench;entry_SYSCALL_64;__x64_sys_sendto;tcp_sendmsg;tcp_push 30",
		"comm:cnibench;entry_SYSCALL_64;__x64_sys_sendto;tcp_sendmsg 10",
		"comm:cnibench;runtime.goexit;github.com/cnibench/cnibench/internal/engine.(*client).run;syscall.Syscall 20",
		"comm:swapper/0;do_idle;__napi_poll;bpf_prog:hostrouting_ingress 15",
		"comm:swapper/0;do_idle;__napi_poll;tcp_v4_rcv 10",
		"comm:swapper/0;do_idle 10",
		"comm:cnibench;[unknown] libc.so.6 5",
	)
}

// baseProfile is the base of the golden differential graph: less
// tcp_sendmsg, more tcp_v4_rcv, and process_backlog, which is gone in
// sampleProfile.
func baseProfile(tb testing.TB) *profile.Profile {
	return folded(tb,
		"comm:cnibench;entry_SYSCALL_64;__x64_sys_sendto;tcp_sendmsg;tcp_push 20",
		"comm:cnibench;runtime.goexit;github.com/cnibench/cnibench/internal/engine.(*client).run;syscall.Syscall 20",
		"comm:swapper/0;do_idle;__napi_poll;tcp_v4_rcv 30",
		"comm:swapper/0;do_idle;__napi_poll;process_backlog;__netif_receive_skb 12",
		"comm:swapper/0;do_idle 13",
		"comm:ksoftirqd/0;run_ksoftirqd 5",
	)
}

// wellFormed fails unless data is well-formed XML, and returns how many
// elements of each name it has.
func wellFormed(tb testing.TB, data []byte) map[string]int {
	tb.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return counts
		}
		if err != nil {
			tb.Fatalf("output is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

// golden compares got with testdata/name, rewriting it with -update; on a
// mismatch it writes testdata/name.got to diff.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/report/flame -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		_ = os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs from the golden file; see %s.got (go test -update rewrites it)", name, path)
	}
}

func render(tb testing.TB, p *profile.Profile, o Options) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := SVG(&b, p, o); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func renderDiff(tb testing.TB, base, other *profile.Profile, o Options) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := DiffSVG(&b, base, other, o); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}
