// Package dockerfiles holds the image definition that package build renders
// and solves. It is a package only so the file can be embedded.
package dockerfiles

import _ "embed"

//go:embed Dockerfile
var dockerfile []byte

// Dockerfile returns the image definition (a copy; callers may modify it).
func Dockerfile() []byte { return append([]byte(nil), dockerfile...) }
