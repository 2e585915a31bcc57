package options

import "github.com/imagectl/imagectl/cmd/imagectl/app/options/base"

// VersionInfo is what imagectl version prints.
type VersionInfo = base.VersionInfo

// CurrentVersion is the version set at link time (base.Version: -ldflags
// "-X github.com/imagectl/imagectl/cmd/imagectl/app/options/base.Version=v0.1.0"),
// else the module version go install recorded, and the VCS revision go
// build recorded.
func CurrentVersion() VersionInfo { return base.CurrentVersion() }

// Version is the version set at link time (base.Version), "dev" without
// one: what build definitions and the registry user agent record.
func Version() string { return base.Version }
