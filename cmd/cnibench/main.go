// Command cnibench benchmarks container network datapaths.
package main

import "github.com/cnibench/cnibench/internal/app"

func main() { app.Main() }
