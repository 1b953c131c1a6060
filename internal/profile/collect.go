package profile

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// procSource reads what the collector needs to know about a process. The
// real one reads /proc; tests give a fake.
type procSource interface {
	// comm returns the process's name.
	comm(pid uint32) (string, error)
	// maps returns its executable mappings.
	maps(pid uint32) ([]mapping, error)
	// open opens the file of mapping m as the process sees it.
	open(pid uint32, m *mapping) (fileReader, error)
}

// fileReader is an opened mapped file.
type fileReader interface {
	io.ReaderAt
	io.Closer
}

// procInfo is what is cached about a process seen in samples.
type procInfo struct {
	comm      string
	maps      []mapping
	refreshes int
}

// maxRefreshes bounds how often a process's maps are re-read when a user
// address falls outside them (a process that exec'd or mapped a library
// after it was first seen).
const maxRefreshes = 3

// unknownComm names a process that exited before it was first read.
const unknownComm = "[unknown]"

// stackAgg counts the samples of one (pid, cpu, call chain).
type stackAgg struct {
	pid, cpu uint32
	comm     string
	frames   []frame
	maps     []*mapping // per frame: the user frame's mapping, or nil
	count    int64
	period   int64
	// time is the wall-clock start of the sample's timestamp bucket in
	// Unix ns (0 without Options.Timestamps).
	time int64
}

// collector turns sample records into aggregated stacks, reading each
// process's comm and maps the first time it is seen and opening the files
// it maps (kept open until build so that processes may exit).
type collector struct {
	src      procSource
	procs    map[uint32]*procInfo
	stacks   map[string]*stackAgg
	order    []*stackAgg
	files    map[fileKey]fileReader
	fileErr  map[fileKey]error
	samples  int64
	lost     uint64
	bad      int // malformed records
	throttle int
	keyBuf   []byte
	frameBuf []frame
	// ts converts perf times to wall-clock buckets (zero: no timestamps).
	ts timestamper
}

func newCollector(src procSource) *collector {
	return &collector{
		src:     src,
		procs:   map[uint32]*procInfo{},
		stacks:  map[string]*stackAgg{},
		files:   map[fileKey]fileReader{},
		fileErr: map[fileKey]error{},
	}
}

// record handles one ring record.
func (c *collector) record(rec []byte) {
	switch recordType(rec) {
	case recordSample:
		s, err := parseSample(rec)
		if err != nil {
			c.bad++
			return
		}
		c.add(&s)
	case recordLost, recordLostSamples:
		n, err := parseLost(rec)
		if err != nil {
			c.bad++
			return
		}
		c.lost += n
	case recordThrottle:
		c.throttle++
	}
}

// add counts one sample.
func (c *collector) add(s *rawSample) {
	c.samples++
	k := c.keyBuf[:0]
	k = ne.AppendUint32(k, s.pid)
	k = ne.AppendUint32(k, s.cpu)
	k = append(k, s.chain...)
	wall := c.ts.bucket(s.time)
	if wall != 0 {
		k = ne.AppendUint64(k, uint64(wall))
	}
	c.keyBuf = k
	if a, ok := c.stacks[string(k)]; ok {
		a.count++
		a.period += int64(s.period)
		return
	}
	p := c.proc(s.pid)
	frames := splitChain(s, c.frameBuf)
	c.frameBuf = frames
	a := &stackAgg{
		pid: s.pid, cpu: s.cpu, comm: p.comm,
		frames: append([]frame(nil), frames...),
		maps:   make([]*mapping, len(frames)),
		count:  1, period: int64(s.period), time: wall,
	}
	for i, f := range a.frames {
		if f.kernel {
			continue
		}
		m := findMapping(p.maps, f.addr)
		if m == nil && p.refreshes < maxRefreshes {
			p.refreshes++
			c.readMaps(s.pid, p)
			m = findMapping(p.maps, f.addr)
		}
		a.maps[i] = m
	}
	c.stacks[string(k)] = a
	c.order = append(c.order, a)
}

// proc returns the cached process, reading it on first sight.
func (c *collector) proc(pid uint32) *procInfo {
	if p, ok := c.procs[pid]; ok {
		return p
	}
	p := &procInfo{comm: unknownComm}
	if pid == 0 {
		p.comm = "swapper"
	} else {
		if comm, err := c.src.comm(pid); err == nil {
			p.comm = comm
		}
		c.readMaps(pid, p)
	}
	c.procs[pid] = p
	return p
}

// readMaps (re)reads a process's maps and opens the files not yet open.
func (c *collector) readMaps(pid uint32, p *procInfo) {
	ms, err := c.src.maps(pid)
	if err != nil {
		return // exited, or a kernel thread
	}
	p.maps = ms
	for i := range ms {
		m := &ms[i]
		if !m.fileBacked() {
			continue
		}
		k := m.key()
		if _, ok := c.files[k]; ok {
			continue
		}
		if _, ok := c.fileErr[k]; ok {
			continue
		}
		f, err := c.src.open(pid, m)
		if err != nil {
			c.fileErr[k] = err
			continue
		}
		c.files[k] = f
	}
}

// close closes the files the collector opened.
func (c *collector) close() {
	for k, f := range c.files {
		f.Close()
		delete(c.files, k)
	}
}

// procFS is the procSource of the running kernel, rooted at root ("/proc").
type procFS struct{ root string }

func (p procFS) dir(pid uint32) string { return p.root + "/" + strconv.FormatUint(uint64(pid), 10) }

func (p procFS) comm(pid uint32) (string, error) {
	b, err := os.ReadFile(p.dir(pid) + "/comm")
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

func (p procFS) maps(pid uint32) ([]mapping, error) {
	f, err := os.Open(p.dir(pid) + "/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMaps(f)
}

// open tries, in order, the process's map_files entry (the very file
// mapped, even if deleted or in another mount namespace; needs
// CAP_SYS_ADMIN), the path under the process's root (a container's file
// system), and the path itself.
func (p procFS) open(pid uint32, m *mapping) (fileReader, error) {
	candidates := []string{
		fmt.Sprintf("%s/map_files/%x-%x", p.dir(pid), m.start, m.limit),
		p.dir(pid) + "/root" + m.path,
		m.path,
	}
	var first error
	for _, name := range candidates {
		f, err := os.Open(name)
		if err == nil {
			return f, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("open %s of pid %d: %w", m.path, pid, first)
}
