package cidrfilter

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestKeyOf(t *testing.T) {
	tests := []struct {
		in      string
		want    prefixKey
		wantErr bool
	}{
		{"240.1.2.3/32", prefixKey{32, [4]byte{240, 1, 2, 3}}, false},
		{"240.1.2.3/24", prefixKey{24, [4]byte{240, 1, 2, 0}}, false}, // masked
		{"247.255.255.255/4", prefixKey{4, [4]byte{240, 0, 0, 0}}, false},
		{"0.0.0.0/0", prefixKey{0, [4]byte{}}, false},
		{"241.2.3.4/31", prefixKey{31, [4]byte{241, 2, 3, 4}}, false},
		{"241.2.3.5/31", prefixKey{31, [4]byte{241, 2, 3, 4}}, false},
		{"2001:db8::/32", prefixKey{}, true},
		{"::ffff:240.0.0.0/100", prefixKey{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := keyOf(netip.MustParsePrefix(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("keyOf(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("keyOf(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
	if got := (prefixKey{24, [4]byte{240, 1, 2, 0}}).String(); got != "240.1.2.0/24" {
		t.Errorf("prefixKey.String() = %q", got)
	}
	if _, err := keyOf(netip.Prefix{}); err == nil {
		t.Fatal("keyOf(zero prefix): no error")
	}
}

func TestKeysOf(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		wantErr bool
	}{
		{"distinct", []string{"240.0.0.0/24", "240.0.1.0/24", "240.0.1.0/25"}, false},
		{"duplicate after masking", []string{"240.0.0.0/24", "240.0.0.7/24"}, true},
		{"unsorted distinct", []string{"240.0.1.0/24", "240.0.0.0/24", "240.0.0.0/25"}, false},
		{"unsorted duplicate", []string{"240.0.1.0/24", "240.0.0.0/24", "240.0.1.0/24"}, true},
		{"same address, two lengths", []string{"240.0.0.0/24", "240.0.0.0/25"}, false},
		{"ipv6", []string{"240.0.0.0/24", "2001:db8::/48"}, true},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in []netip.Prefix
			for _, s := range tt.in {
				in = append(in, netip.MustParsePrefix(s))
			}
			keys, err := keysOf(in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("keysOf error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && len(keys) != len(in) {
				t.Fatalf("keysOf: %d keys for %d prefixes", len(keys), len(in))
			}
		})
	}
}

func TestMaxEntries(t *testing.T) {
	tests := []struct {
		n    int
		want uint32
		err  bool
	}{
		{0, 1024, false},
		{10, 1024, false},
		{960, 1024, false},
		{961, 2048, false},
		{10000, 10240, false},
		{1000000, 1015808, false}, // 1e6 + 15625 rounded up to 1024
		{10000000, 10157056, false},
		{-1, 0, true},
		{1 << 31, 0, true},
	}
	for _, tt := range tests {
		got, err := maxEntries(tt.n)
		if (err != nil) != tt.err {
			t.Fatalf("maxEntries(%d) error = %v, want error %v", tt.n, err, tt.err)
		}
		if got != tt.want {
			t.Errorf("maxEntries(%d) = %d, want %d", tt.n, got, tt.want)
		}
		if err == nil && int(got) < tt.n {
			t.Errorf("maxEntries(%d) = %d: smaller than n", tt.n, got)
		}
	}
}

func TestLengthSet(t *testing.T) {
	type op struct {
		add     bool
		l       uint32
		changed bool // the present-lengths list changes
	}
	tests := []struct {
		name string
		ops  []op
		want []uint8
	}{
		{"empty", nil, nil},
		{"one", []op{{true, 24, true}}, []uint8{24}},
		{"longest first", []op{{true, 16, true}, {true, 32, true}, {true, 0, true}, {true, 24, true}}, []uint8{32, 24, 16, 0}},
		{"second of a length", []op{{true, 24, true}, {true, 24, false}}, []uint8{24}},
		{"remove one of two", []op{{true, 24, true}, {true, 24, false}, {false, 24, false}}, []uint8{24}},
		{"remove last", []op{{true, 24, true}, {true, 28, true}, {false, 24, true}}, []uint8{28}},
		{"remove absent", []op{{true, 24, true}, {false, 25, false}}, []uint8{24}},
		{"all", func() []op {
			var ops []op
			for l := uint32(0); l <= 32; l++ {
				ops = append(ops, op{true, l, true})
			}
			return ops
		}(), func() []uint8 {
			var w []uint8
			for l := 32; l >= 0; l-- {
				w = append(w, uint8(l))
			}
			return w
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s lengthSet
			for i, o := range tt.ops {
				var changed bool
				if o.add {
					changed = s.add(o.l)
				} else {
					changed = s.remove(o.l)
				}
				if changed != o.changed {
					t.Fatalf("op %d (%+v): changed = %v", i, o, changed)
				}
			}
			v := s.value()
			if int(v.N) != len(tt.want) {
				t.Fatalf("value().N = %d, want %d", v.N, len(tt.want))
			}
			got := v.Len[:v.N]
			if len(tt.want) > 0 && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("value().Len = %v, want %v", got, tt.want)
			}
			for i := int(v.N); i < len(v.Len); i++ {
				if v.Len[i] != 0 {
					t.Fatalf("value().Len[%d] = %d past N", i, v.Len[i])
				}
			}
		})
	}
}

func TestLengths(t *testing.T) {
	in := []netip.Prefix{
		netip.MustParsePrefix("240.0.0.0/24"),
		netip.MustParsePrefix("240.0.1.1/32"),
		netip.MustParsePrefix("240.0.2.0/24"),
		netip.MustParsePrefix("241.0.0.0/8"),
		netip.MustParsePrefix("2001:db8::/32"), // ignored
	}
	if got, want := Lengths(in), []int{32, 24, 8}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Lengths = %v, want %v", got, want)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindLPM: "lpm-trie", KindHash: "hash-per-prefix-length", Kind(9): "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}
