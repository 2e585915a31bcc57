// Package vsix reads and checks VS Code extension packages (VSIX): it
// downloads a VSIX body safely (gzip detected by magic bytes, a zip required,
// an HTML page rejected, size bounded), validates a VSIX before it is cached
// (identity and target platform from extension.vsixmanifest, agreement of
// extension/package.json, the engines.vscode check, and archive safety: clean
// entry names, no links, bounded size, entry count and compression ratio), and
// extracts its extension/ folder safely.
package vsix
