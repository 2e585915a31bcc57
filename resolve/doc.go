// Package resolve picks, from matrix.yaml and the catalog snapshot, the newest
// compatible set of code-server, Python, Ray, debugpy and extension files per
// platform, and explains why each version won and why each newer one lost.
// It never touches the network and never modifies the catalog it is given.
//
// The files follow the components, in the order Resolve settles them:
//
//   - resolve.go: Request, Resolve and the resolver (the catalog's candidate
//     lists sorted newest first, once, instead of a normalized copy of the
//     catalog), errors and platforms (imagespec.Platforms).
//   - ray.go: the requested Ray release.
//   - python.go: the CPython minor Ray ships wheels for on every platform.
//   - debugpy.go: the newest debugpy with a wheel for that Python.
//   - codeserver.go: the newest code-server whose VS Code accepts every
//     extension; extensions.go: each extension's version and files, and the
//     install order (dependencies first).
//   - pylock.go: the locked Python closure of the set; runtime.go: the tools
//     image and the python-build-standalone runtime.
//   - all.go: All, every buildable Ray version's set.
//   - filter.go: the one candidate filter (first, filter) every component
//     uses: a candidate list and ordered checks, each returning why a
//     candidate is rejected; the reasons are the Rejected entries that
//     explain.go prints for --explain.
//   - versions.go: the two version schemes: semver constraints for
//     code-server and extensions, PEP 440 specifiers (internal/pep440) for
//     Ray, debugpy and requires-python.
//   - tags.go: RenderTags, the one rendering of matrix.yaml's tag
//     templates, flagged floating or immutable (imagespec.Tags).
//
// The resolved set (the lock) is imagespec.Set.
package resolve
