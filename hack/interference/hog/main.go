// Command hog burns a known share of the CPUs, as another program on a
// busy host would: -cores 1.5 runs two busy threads, each busy 75 % of
// every 10 ms period. It backs docs/interference.md's measurement of the
// threshold at which other programs' CPU moves the suite's figures.
//
//	go run ./hack/interference/hog -cores 0.5 -for 5m
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"time"
)

func main() {
	cores := flag.Float64("cores", 1, "CPU to burn, in cores (0.25 = a quarter of one core)")
	dur := flag.Duration("for", time.Hour, "how long to run")
	flag.Parse()
	if *cores <= 0 || *cores > float64(runtime.NumCPU()) {
		fmt.Fprintf(os.Stderr, "hog: -cores %g: must be above 0 and at most %d\n", *cores, runtime.NumCPU())
		os.Exit(2)
	}
	n := int(math.Ceil(*cores))
	duty := *cores / float64(n)
	const period = 10 * time.Millisecond
	busy := time.Duration(duty * float64(period))
	for range n {
		go func() {
			runtime.LockOSThread()
			for {
				start := time.Now()
				for time.Since(start) < busy {
				}
				if rest := period - time.Since(start); rest > 0 {
					time.Sleep(rest)
				}
			}
		}()
	}
	time.Sleep(*dur)
}
