// mkimage: build a single-layer image tarball (docker-archive, loadable by
// `ctr images import`) from local files, without any container engine.
//
//	mkimage -o out.tar -t example.local/pause:v1 -entrypoint /pause /path/to/pause=/pause [/bin/busybox=/bin/busybox ...]
//	-link /bin/sh=busybox adds a symlink.
//	-root DIR adds a whole staged tree (directories, files, symlinks as they are).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	out := flag.String("o", "image.tar", "output tarball")
	tag := flag.String("t", "", "image reference, e.g. example.local/app:v1")
	entry := flag.String("entrypoint", "", "entrypoint (space separated)")
	var links multi
	flag.Var(&links, "link", "symlink path=target")
	root := flag.String("root", "", "a staged root tree to add as it is")
	flag.Parse()
	if *tag == "" {
		log.Fatal("-t required")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	mkdirs := func(p string) {
		parts := strings.Split(strings.Trim(p, "/"), "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}))
			}
		}
	}
	for _, a := range []string{"tmp/x", "etc/x", "proc/x", "sys/x", "dev/x"} {
		mkdirs(a)
	}
	if *root != "" {
		must(filepath.Walk(*root, func(p string, st os.FileInfo, err error) error {
			if err != nil || p == *root {
				return err
			}
			rel, _ := filepath.Rel(*root, p)
			switch {
			case st.IsDir():
				if !dirs[rel+"/"] {
					dirs[rel+"/"] = true
					return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: int64(st.Mode().Perm())})
				}
			case st.Mode()&os.ModeSymlink != 0:
				t, err := os.Readlink(p)
				if err != nil {
					return err
				}
				return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: rel, Linkname: t, Mode: 0o777})
			case st.Mode().IsRegular():
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(st.Mode().Perm()), Size: st.Size()}); err != nil {
					return err
				}
				_, err = io.Copy(tw, f)
				return err
			}
			return nil
		}))
	}
	for _, arg := range flag.Args() {
		src, dst, ok := strings.Cut(arg, "=")
		if !ok {
			dst = src
		}
		dst = strings.TrimPrefix(dst, "/")
		mkdirs(dst)
		f, err := os.Open(src)
		must(err)
		st, err := f.Stat()
		must(err)
		must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: int64(st.Mode().Perm()), Size: st.Size()}))
		_, err = io.Copy(tw, f)
		must(err)
		f.Close()
	}
	for _, l := range links {
		p, target, _ := strings.Cut(l, "=")
		p = strings.TrimPrefix(p, "/")
		mkdirs(p)
		must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777}))
	}
	must(tw.Close())
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	must(err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	must(err)
	cf, err := img.ConfigFile()
	must(err)
	cf = cf.DeepCopy()
	cf.Architecture = "amd64"
	cf.OS = "linux"
	cf.Config = v1.Config{Env: []string{"PATH=/bin:/usr/bin:/sbin:/usr/sbin"}}
	if *entry != "" {
		cf.Config.Entrypoint = strings.Fields(*entry)
	}
	img, err = mutate.ConfigFile(img, cf)
	must(err)
	ref, err := name.NewTag(*tag)
	must(err)
	must(tarball.WriteToFile(*out, ref, img))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
