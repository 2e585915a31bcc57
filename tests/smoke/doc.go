// Package smoketest holds the tests around the smoke harness: TestSmoke
// runs it (smoke/kind; it skips with the exact reason Docker, kind or the
// network are missing, and fails instead under IMAGECTL_SMOKE_REQUIRE=1),
// the examples are decoded strictly into KubeRay's types, and README's user
// guide is checked against the commands the harness runs. Nothing outside
// tests/ may import this package.
package smoketest
