// Package dockerdriver starts the buildkitd that imagectl's
// docker-container driver builds with: a privileged moby/buildkit
// container, started (or reused) through the docker CLI as buildx's
// docker-container driver does. package build's client dials it at the
// docker-container://NAME address Ensure returns.
package dockerdriver
