// Package matrix loads and validates matrix.yaml, the declarative description of
// what imagectl builds: the image and its repositories, the target platforms, the
// base image, a version constraint or policy per component, the extensions, the
// code-server settings to pre-seed, and the tag templates.
//
// Load reads a file (through internal/safefile, at most 1 MiB); Parse decodes
// bytes. Decoding is strict: an unknown field, a wrong type or a bad version
// constraint (semver for code-server and extensions, a PEP 440 specifier for
// Ray and debugpy) is an error naming the file, the line and the field path
// ("matrix.yaml:6: components.ray.extra: unknown field ..."):
//
//   - yaml.go parses the single YAML document into a yaml.v3 node tree and
//     enforces the limits on hostile input: the file size, a nesting depth
//     of 64, at most 1000 keys per mapping, and no anchors, aliases or merge
//     keys. It then decodes into the types of types.go with yaml.v3's
//     Decoder.KnownFields(true).
//   - shape.go walks the node tree alongside those types before yaml.v3
//     decodes it. It records the line of every field path, and reports, in
//     document order, unknown fields, duplicate keys, wrong types, and what
//     yaml.v3 would accept but matrix.yaml does not ("yes" for true, true for
//     a string, a null list item, settings with no JSON form). yaml.v3 records
//     one error per pair of equal keys, so a few kilobytes of one repeated key
//     would otherwise cost it hundreds of megabytes.
//   - validate.go checks the decoded values (constraints, URLs, platforms,
//     tag templates) after defaults are applied (applyDefaults, matrix.go).
package matrix
