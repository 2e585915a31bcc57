// Package matrix loads and validates matrix.yaml, the declarative description of
// what imagectl builds: the image and its repositories, the target platforms, the
// base image, a version constraint or policy per component, the extensions, the
// code-server settings to pre-seed, and the tag templates.
//
// Load reads a file; Parse decodes bytes. Decoding is strict: an unknown field, a
// wrong type or a bad version constraint (semver for code-server and extensions,
// a PEP 440 specifier for Ray and debugpy) is an error naming the file, the line
// and the field path.
package matrix
