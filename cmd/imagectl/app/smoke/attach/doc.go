// Package attach is the attach command: "imagectl smoke attach" and
// "imagectl-probe attach", one implementation (flags, help, exit codes 0 to
// 7, the -o json report of smoke/probe). It imports options/base, not
// options, so that imagectl-probe, the small binary copied into the
// code-server sidecar, links the probe and little else (arch_test.go's
// TestProbeLinks holds it under 15 MB).
package attach
