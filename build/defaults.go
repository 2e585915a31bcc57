package build

import "github.com/imagectl/imagectl/dockerfiles"

func defaultDefinition() []byte { return dockerfiles.Dockerfile() }
