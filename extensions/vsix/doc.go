// Package vsix reads and checks VS Code extension packages (VSIX): it
// downloads a VSIX body safely (gzip detected by magic bytes, a zip required,
// an HTML page rejected, size bounded, a body cut short reported as a
// BodyError), validates a VSIX before it is cached (identity and target
// platform from extension.vsixmanifest, read with vscode/vsixmanifest;
// agreement of extension/package.json, the engines.vscode check, and
// archive safety: clean entry names, no links,
// bounded entry count and expansion, per entry and for the whole archive,
// and every entry read in full against its declared size and CRC-32), and
// extracts its extension/ folder safely. Validation and extraction honour
// their context: a cancellation stops them within one buffer.
package vsix
