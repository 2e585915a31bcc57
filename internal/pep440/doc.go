// Package pep440 is the one place Python package versions (Ray, debugpy)
// and PEP 440 version specifiers (requires-python, matrix.yaml's Ray and
// debugpy constraints) are parsed, ordered and checked. It wraps
// github.com/aquasecurity/go-pep440-version (a port of pypa/packaging), adding
// what imagectl needs on top: a total order for sorting, strict specifier
// syntax (comma-separated clauses, each with a PEP 440 operator), PEP 440's
// default pre-release exclusion, and whether a CPython minor version
// ("3.12") satisfies a requires-python.
package pep440
