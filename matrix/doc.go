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
//     scans it: it records the line of every field path, refuses what
//     yaml.v3 must not decode (a file over 1 MiB, nesting deeper than 64,
//     more than 1000 keys in a mapping, anchors, aliases, merge keys,
//     duplicate or non-string keys) and notes what yaml.v3 would accept but
//     matrix.yaml does not ("yes" for true, true for a string, a null list
//     item, settings with no JSON form). yaml.v3 then decodes into the
//     types of types.go with Decoder.KnownFields(true); its errors (an
//     unknown field, a list where a string belongs) are given the field
//     path of the node on their line. The earlier of the two is reported.
//   - validate.go checks the decoded values (constraints, URLs, platforms,
//     tag templates) after defaults are applied (applyDefaults, matrix.go).
package matrix
