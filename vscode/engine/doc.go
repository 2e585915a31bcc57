// Package engine implements the check VS Code applies to an extension's
// engines.vscode field (microsoft/vscode
// src/vs/platform/extensions/common/extensionValidator.ts): does a VS Code
// version satisfy an engine range such as "^1.95.0"?
//
// Accepted ranges are "*" (always passes) or
// ^(\^|>=)?(\d+|x)\.(\d+|x)\.(\d+|x)(-.*)?$ ; "^1.95.0" accepts 1.101.2 but not
// 2.0.0, ">=1.95.0" accepts anything from 1.95.0 on, "1.x.x" any 1.*, and a
// suffix "-YYYYMMDD" is a not-before date for the VS Code build. The date is
// compared only when the product date is known (AcceptsAt) and, as in VS Code,
// only when the versions are otherwise equal: major.minor.patch for ^ and plain
// ranges, major.minor for >= (VS Code checks the date before the patch there).
// Accepts ignores the date because a bare version string carries none.
package engine
