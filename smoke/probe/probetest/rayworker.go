package probetest

import _ "embed"

// RayWorker is rayworker.py. Usage: python3 rayworker.py MODULE FUNCTION ARG,
// with MODULE importable (Ray puts the job's working_dir on PYTHONPATH and
// makes it the worker's cwd) and RAY_NODE_IP the address debugpy listens on.
//
//go:embed rayworker.py
var RayWorker []byte
