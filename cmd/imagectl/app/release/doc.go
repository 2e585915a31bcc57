// Package release is imagectl plan and imagectl release, one package because they
// share their flags and their setup (the targets, the registry, the
// definition): plan says what needs rebuilding, release builds it through
// release/builder, signs, verifies and moves the tags.
package release
