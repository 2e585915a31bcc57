// Package smoke is imagectl smoke: image (containers of the built image), kind
// (kind + KubeRay) and attach (the debugger attach itself: package
// smoke/attach, which imagectl-probe runs too).
package smoke
