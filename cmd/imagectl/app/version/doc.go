// Package version is imagectl version: the version set at link time (or
// recorded by go install), the VCS revision, the Go version and platform.
package version
