//go:build tools

// Package tools pins modules the project uses before any package imports them,
// so that `go mod tidy` keeps them at the versions known to build together.
package tools

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/google/go-dap"
	_ "github.com/moby/buildkit/client"
	_ "github.com/sigstore/cosign/v2/pkg/cosign"
	_ "gopkg.in/yaml.v3"
)
