//go:build linux && amd64

package nscpu

import (
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	t.Log("probe:", Probe())
	a, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t.Log(a.Attached(), a.Missing())
	time.Sleep(2 * time.Second)
	u, err := a.Read()
	t.Log(u, err)
	tt, err := a.Totals()
	t.Logf("%+v %v", tt, err)
}
