package profile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// ringPages is the size of each CPU's ring in pages (a power of two):
	// 512 KiB holds more than a second of 999 Hz samples with deep stacks.
	ringPages = 128
	// pollInterval bounds the time between drains, so that a process is
	// read from /proc soon after it first appears in a sample.
	pollInterval = 100 * time.Millisecond
)

// event is one CPU's perf event and its ring.
type event struct {
	cpu  int
	fd   int
	mem  []byte
	meta *unix.PerfEventMmapPage
	data []byte
}

// Session samples the CPUs until Stop. Its methods are safe for
// concurrent use.
type Session struct {
	mu      sync.Mutex
	freq    int
	events  []*event
	stopFD  int
	done    chan struct{}
	col     *collector
	ksStart *kallsyms
	start   time.Time
	stopped bool
	scratch []byte
	ringErr atomic.Int64
	// windows counts the enables.
	windows int
	enabled bool
	// readerCPU is the reader thread's CPU time, set when it exits.
	readerCPU time.Duration
}

// attr is the perf event every CPU gets: cpu-clock at freq Hz, sampling
// IP, pid/tid, time, CPU, period and the kernel and user call chains,
// created disabled.
func attr(freq int) *unix.PerfEventAttr {
	return &unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample:      uint64(freq),
		Sample_type: sampleType,
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED,
		Bits:        unix.PerfBitFreq | unix.PerfBitDisabled | unix.PerfBitWatermark | unix.PerfBitUseClockID,
		Wakeup:      uint32(ringPages * os.Getpagesize() / 4),
		// Sample times on CLOCK_MONOTONIC, which Options.Timestamps maps
		// to the wall clock.
		Clockid: unix.CLOCK_MONOTONIC,
	}
}

// openEvent opens the event on cpu, classifying the errors that mean
// "not on this host" as ErrNotSupported.
func openEvent(freq, cpu int) (int, error) {
	fd, err := unix.PerfEventOpen(attr(freq), -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		return fd, nil
	}
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return -1, fmt.Errorf("CPU profiling %w: perf_event_open(cpu-clock, all processes, cpu %d): %v (kernel.perf_event_paranoid is %s: run as root or set it to -1)", ErrNotSupported, cpu, err, paranoid())
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENODEV):
		return -1, fmt.Errorf("CPU profiling %w: perf_event_open(cpu-clock, cpu %d): %v (no perf events in this kernel or container)", ErrNotSupported, cpu, err)
	case errors.Is(err, unix.EINVAL):
		return -1, fmt.Errorf("perf_event_open(cpu-clock at %d Hz, cpu %d): %v (is Options.Frequency above kernel.perf_event_max_sample_rate?)", freq, cpu, err)
	}
	return -1, fmt.Errorf("perf_event_open(cpu-clock, cpu %d): %w", cpu, err)
}

func paranoid() string {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// onlineCPUs lists the online CPUs.
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("online CPUs: %w", err)
	}
	cpus, err := parseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("online CPUs: %w", err)
	}
	return cpus, nil
}

// Probe reports whether Start can work here: perf_event_open of the
// cpu-clock event system-wide, and kernel addresses visible in
// /proc/kallsyms. Its error wraps ErrNotSupported with the reason.
func Probe() error {
	cpus, err := onlineCPUs()
	if err != nil {
		return err
	}
	fd, err := openEvent(DefaultFrequency, cpus[0])
	if err != nil {
		return fmt.Errorf("profile: probe: %w", err)
	}
	unix.Close(fd)
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return fmt.Errorf("profile: probe: CPU profiling %w: %v", ErrNotSupported, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		if _, err := parseKallsyms(strings.NewReader(sc.Text())); err != nil {
			return fmt.Errorf("profile: probe: CPU profiling %w: %v", ErrNotSupported, err)
		}
	}
	return nil
}

// readKallsyms parses /proc/kallsyms.
func readKallsyms() (*kallsyms, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("CPU profiling %w: %v", ErrNotSupported, err)
	}
	defer f.Close()
	k, err := parseKallsyms(f)
	if errors.Is(err, errKptrRestrict) {
		return nil, fmt.Errorf("CPU profiling %w: %v", ErrNotSupported, err)
	}
	return k, err
}

// Start opens one cpu-clock sampling event per CPU, maps their rings and
// starts the goroutine that drains them; sampling begins at once unless
// o.Paused.
func Start(o Options) (*Session, error) {
	freq, err := o.frequency()
	if err != nil {
		return nil, err
	}
	online, err := onlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("profile: start: %w", err)
	}
	cpus := online
	if o.CPUs != nil {
		if len(o.CPUs) == 0 {
			return nil, errors.New("profile: Options.CPUs is empty: give nil for every online CPU")
		}
		for i, c := range o.CPUs {
			if !slices.Contains(online, c) {
				return nil, fmt.Errorf("profile: Options.CPUs: CPU %d is not online (online: %v)", c, online)
			}
			if slices.Contains(o.CPUs[:i], c) {
				return nil, fmt.Errorf("profile: Options.CPUs: CPU %d given twice", c)
			}
		}
		cpus = o.CPUs
	}
	ks, err := startSymbols()
	if err != nil {
		return nil, fmt.Errorf("profile: start: %w", err)
	}
	s := &Session{freq: freq, done: make(chan struct{}), col: newCollector(procFS{root: "/proc"}), ksStart: ks, stopFD: -1}
	if err := s.open(cpus); err != nil {
		s.closeEvents()
		return nil, fmt.Errorf("profile: start: %w", err)
	}
	s.start = time.Now()
	if o.Timestamps {
		s.col.ts = newTimestamper()
	}
	if !o.Paused {
		if err := s.ioctlAll(unix.PERF_EVENT_IOC_ENABLE); err != nil {
			s.closeEvents()
			return nil, fmt.Errorf("profile: start: %w", err)
		}
		s.windows, s.enabled = 1, true
	}
	go s.loop()
	return s, nil
}

// open opens, maps and registers the events.
func (s *Session) open(cpus []int) error {
	pageSize := os.Getpagesize()
	for _, cpu := range cpus {
		fd, err := openEvent(s.freq, cpu)
		if err != nil {
			return err
		}
		ev := &event{cpu: cpu, fd: fd}
		s.events = append(s.events, ev)
		mem, err := unix.Mmap(fd, 0, (1+ringPages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return fmt.Errorf("mmap the ring of cpu %d (%d KiB; kernel.perf_event_mlock_kb or RLIMIT_MEMLOCK): %w", cpu, ringPages*pageSize/1024, err)
		}
		ev.mem = mem
		ev.meta = (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
		off, size := ev.meta.Data_offset, ev.meta.Data_size
		if off == 0 || size == 0 { // kernels before 4.1 leave them 0
			off, size = uint64(pageSize), uint64(ringPages*pageSize)
		}
		ev.data = mem[off : off+size]
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	s.stopFD = fd
	return nil
}

func (s *Session) ioctlAll(req uint) error {
	for _, ev := range s.events {
		if err := unix.IoctlSetInt(ev.fd, req, 0); err != nil {
			return fmt.Errorf("perf event ioctl on cpu %d: %w", ev.cpu, err)
		}
	}
	return nil
}

// Pause stops sampling until Resume (PERF_EVENT_IOC_DISABLE on every CPU's
// event): the windows between Resume and Pause are what is profiled.
func (s *Session) Pause() error { return s.toggle(unix.PERF_EVENT_IOC_DISABLE, "pause") }

// Resume starts sampling again (PERF_EVENT_IOC_ENABLE).
func (s *Session) Resume() error { return s.toggle(unix.PERF_EVENT_IOC_ENABLE, "resume") }

func (s *Session) toggle(req uint, what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return fmt.Errorf("profile: %s: session stopped", what)
	}
	if err := s.ioctlAll(req); err != nil {
		return fmt.Errorf("profile: %s: %w", what, err)
	}
	on := req == unix.PERF_EVENT_IOC_ENABLE
	if on && !s.enabled {
		s.windows++
	}
	s.enabled = on
	return nil
}

// loop drains the rings when one passes its watermark, every
// pollInterval, and a last time when Stop signals the eventfd.
func (s *Session) loop() {
	defer close(s.done)
	// The reader owns its thread so that the thread's CPU time is the
	// reader's cost (the thread exits with the goroutine).
	runtime.LockOSThread()
	threadCPU := func() time.Duration {
		var ru unix.Rusage
		if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// The thread may have run other goroutines before: count from here.
	cpu0 := threadCPU()
	defer func() { s.readerCPU = threadCPU() - cpu0 }()
	pfds := make([]unix.PollFd, 0, len(s.events)+1)
	for _, ev := range s.events {
		pfds = append(pfds, unix.PollFd{Fd: int32(ev.fd), Events: unix.POLLIN})
	}
	pfds = append(pfds, unix.PollFd{Fd: int32(s.stopFD), Events: unix.POLLIN})
	for {
		_, err := unix.Poll(pfds, int(pollInterval/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			s.ringErr.Add(1)
			time.Sleep(pollInterval)
		}
		s.drain()
		if pfds[len(pfds)-1].Revents&unix.POLLIN != 0 {
			return
		}
	}
}

// drain reads every ring up to its head.
func (s *Session) drain() {
	for _, ev := range s.events {
		head := atomic.LoadUint64(&ev.meta.Data_head)
		tail := atomic.LoadUint64(&ev.meta.Data_tail)
		newTail, err := readRing(ev.data, tail, head, &s.scratch, s.col.record)
		if err != nil {
			s.ringErr.Add(1)
		}
		atomic.StoreUint64(&ev.meta.Data_tail, newTail)
	}
}

// Stop ends sampling, drains the rings, closes the events and returns the
// symbolised profile.
func (s *Session) Stop() (*Profile, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, errors.New("profile: stop: session already stopped")
	}
	s.stopped = true
	s.mu.Unlock()
	disableErr := s.ioctlAll(unix.PERF_EVENT_IOC_DISABLE)
	var one [8]byte
	ne.PutUint64(one[:], 1)
	if _, err := unix.Write(s.stopFD, one[:]); err != nil {
		return nil, fmt.Errorf("profile: stop: signal the reader: %w", err)
	}
	<-s.done
	window := s.window()
	ncpu := len(s.events)
	s.closeEvents()
	defer s.col.close()
	if disableErr != nil {
		return nil, fmt.Errorf("profile: stop: %w", disableErr)
	}
	if n := s.ringErr.Load(); n > 0 {
		return nil, fmt.Errorf("profile: stop: %d corrupt ring reads (a kernel/ABI mismatch?)", n)
	}
	ks, err := kernelSymbols()
	if err != nil {
		return nil, fmt.Errorf("profile: stop: %w", err)
	}
	p := s.col.build(buildInfo{start: s.start, window: window, frequency: s.freq, cpus: ncpu, windows: s.windows}, ks, s.ksStart)
	return &Profile{P: p, Samples: int(s.col.samples), Lost: s.col.lost, Frequency: s.freq, CPUs: ncpu, Window: window, ReaderCPU: s.readerCPU, Windows: s.windows}, nil
}

// window is the longest time_enabled of the events.
func (s *Session) window() time.Duration {
	var w uint64
	var buf [16]byte // {u64 value; u64 time_enabled}
	for _, ev := range s.events {
		if n, err := unix.Read(ev.fd, buf[:]); err == nil && n == len(buf) {
			w = max(w, ne.Uint64(buf[8:]))
		}
	}
	return time.Duration(w)
}

// closeEvents unmaps and closes everything Start opened.
func (s *Session) closeEvents() {
	for _, ev := range s.events {
		if ev.mem != nil {
			unix.Munmap(ev.mem)
			ev.mem, ev.meta, ev.data = nil, nil, nil
		}
		unix.Close(ev.fd)
	}
	s.events = nil
	if s.stopFD >= 0 {
		unix.Close(s.stopFD)
		s.stopFD = -1
	}
}
