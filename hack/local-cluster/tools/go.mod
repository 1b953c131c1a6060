module github.com/cnibench/cnibench/hack/local-cluster/tools

go 1.23.0

require github.com/google/go-containerregistry v0.20.3

require (
	github.com/containerd/stargz-snapshotter/estargz v0.16.3 // indirect
	github.com/klauspost/compress v1.17.11 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.0 // indirect
	github.com/vbatts/tar-split v0.11.6 // indirect
	golang.org/x/sync v0.10.0 // indirect
)
