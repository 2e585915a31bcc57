// Package probetest holds rayworker.py, a stand-in for a Ray worker process
// running one task with the debugpy calls Ray makes at breakpoint() and,
// with RAY_DEBUG_POST_MORTEM=1, on an uncaught exception (see the script's
// docstring for what it follows and what it prints).
//
// The attach probe's tests (smoke/probe, cmd/imagectl/app) run it on the
// machine, and tests/kube/standin runs it inside the Ray head Pod a real
// kubelet starts.
package probetest
