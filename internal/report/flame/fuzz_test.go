package flame

import (
	"bytes"
	"math"
	"testing"

	"github.com/google/pprof/profile"
)

// FuzzSVG renders frame names and titles of any bytes: the output must be
// well-formed XML with one script and no element from the input, for both
// graphs.
func FuzzSVG(f *testing.F) {
	for _, s := range []string{"tcp_v4_rcv", "<script>", "]]>", "a — b", "\x00", "\xff\xfe", "&amp;", "…"} {
		f.Add(s, s, int64(3))
	}
	f.Add("x", "y", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, name, title string, count int64) {
		fn := &profile.Function{ID: 1, Name: name}
		loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
		other := &profile.Location{ID: 2, Line: []profile.Line{{Function: &profile.Function{ID: 2, Name: "comm:" + name}}}}
		p := &profile.Profile{Sample: []*profile.Sample{
			{Location: []*profile.Location{loc, other}, Value: []int64{count}},
			{Location: []*profile.Location{other}, Value: []int64{1}},
		}}
		base := &profile.Profile{Sample: []*profile.Sample{
			{Location: []*profile.Location{{ID: 3, Line: []profile.Line{{Function: &profile.Function{Name: title}}}}}, Value: []int64{2}},
		}}
		o := Options{Title: title, Subtitle: name, BaseLabel: title, OtherLabel: name}
		for _, render := range []func(*bytes.Buffer) error{
			func(b *bytes.Buffer) error { return SVG(b, p, o) },
			func(b *bytes.Buffer) error { return DiffSVG(b, base, p, o) },
		} {
			var b bytes.Buffer
			if err := render(&b); err != nil {
				t.Fatal(err)
			}
			counts := wellFormed(t, b.Bytes())
			if counts["script"] != 1 || counts["svg"] != 1 {
				t.Fatalf("elements %v from name %q title %q", counts, name, title)
			}
		}
		if got := Fold(p); len(got) == 0 {
			t.Fatal("Fold lost the samples")
		}
	})
}
