package nsrun

import (
	"os"
	"testing"

	"github.com/vishvananda/netns"
)

func TestDoAndScratch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces")
	}
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	h, err := NewScratch()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var inside netns.NsHandle
	if err := Do(h, func() error {
		var err error
		inside, err = netns.Get()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	if !inside.Equal(h) {
		t.Fatal("Do did not run inside the namespace")
	}
	if err := Scratch(func() error {
		cur, err := netns.Get()
		if err != nil {
			return err
		}
		defer cur.Close()
		if cur.Equal(orig) {
			t.Error("Scratch ran in the original namespace")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The caller's thread never moved.
	cur, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if !cur.Equal(orig) {
		t.Fatal("the caller's namespace changed")
	}
}
