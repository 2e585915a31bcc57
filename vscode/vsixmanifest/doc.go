// Package vsixmanifest reads the manifest of a VS Code extension:
// extension.vsixmanifest inside a VSIX, which an installed extension's
// folder keeps as .vsixmanifest. Parse returns what it says (Info: the
// identity, the target platform, and the engine, pre-release, dependency
// and pack properties); the property ids are also the keys of the
// Marketplace's version properties.
//
// It imports imagespec (for the universal target platform) and the
// standard library only, so verify reads an installed extension's manifest
// without importing extensions/, which fetches and validates VSIX files
// (extensions/vsix).
package vsixmanifest
