// Package dashproxy is the local dashboard proxy of `imagectl debug
// --local`: it lets the Ray Distributed Debugger VS Code extension on a
// user's laptop attach to a Ray task paused at breakpoint() in a
// Kubernetes cluster.
//
// Ray's debugger (debugpy) listens on the worker Pod's IP and a random
// port, and the extension polls the dashboard's State API for paused
// workers and attaches to {host: ip, port: debugger_port}, an address the
// laptop cannot reach. So `debug --local` port-forwards the head's
// dashboard to a local port and serves a Proxy in front of it on
// 127.0.0.1; the user adds that address as a cluster in the extension.
//
// The Proxy (an httputil.ReverseProxy) passes every request through
// unchanged, streamed: status, headers and body, of /cluster_id,
// /api/v0/tasks, /api/jobs/..., the UI and everything else. The one
// exception is GET /api/v0/workers: it asks the dashboard for an
// identity-encoded answer and, when that is a 200 JSON State API list in
// Ray's envelope
//
//	{"result": true, "msg": ..., "data": {"result": {"total": N, ...,
//	  "result": [rows], "partial_failure_warning": ..., "warnings": ...}}}
//
// it calls the Tunneler, with the request's context, for each row with
// num_paused_threads >= 1, is_alive true, a debugger_port and an ip, and
// sets the row's ip and debugger_port to the local tunnel it returns.
// Every other member keeps its exact text (numbers such as
// worker_launch_time included) and its place; Content-Length is fixed. A
// row whose tunnel cannot be opened is left as it was and the error
// function (WithErrorFunc) is told. An answer in which no row changes,
// and one that is not such a list (an HTML page, result=false, a 500,
// malformed JSON), passes through byte for byte. An answer larger than the
// limit (WithMaxBody) is a 502, and so is a dashboard that cannot be
// reached; both messages name the URL.
//
// Headers given with WithHeader (Ray's token authentication) go to every
// upstream request and never into a log or an error message.
package dashproxy
