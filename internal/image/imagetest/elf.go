// Package imagetest holds what the image tests share: fake binaries.
package imagetest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FakeELF writes dir/file: a minimal static ELF64 little-endian executable
// header for machine, followed by payload, and returns its path. It does
// not run, but it is what an image build reads: the same bytes always give
// the same image.
func FakeELF(t testing.TB, dir, file string, machine elf.Machine, payload string) string {
	t.Helper()
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), 0})
	b.Write(make([]byte, 8))
	for _, v := range []any{
		uint16(elf.ET_EXEC), uint16(machine), uint32(elf.EV_CURRENT),
		uint64(0x401000), uint64(0), uint64(0), // entry, phoff, shoff
		uint32(0), uint16(64), uint16(56), uint16(0), uint16(64), uint16(0), uint16(0),
	} {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	b.WriteString(payload)
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
