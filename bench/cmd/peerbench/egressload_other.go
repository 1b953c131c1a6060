//go:build !linux

package main

import (
	"context"
	"errors"
	"io"
)

const egressChildCmd = "egress-load-child"

var errEgressOS = errors.New("egress-load: linux only")

func egressChildMain([]string, io.Writer) error { return errEgressOS }

func runEgressLoad(context.Context, options, string, io.Writer) error { return errEgressOS }
