// Package dashboard is a client for the parts of the Ray dashboard HTTP API
// the Ray Distributed Debugger extension uses to find paused workers:
// GET /cluster_id and the State API list endpoints /api/v0/workers and
// /api/v0/tasks, with the exact queries the extension sends.
//
// Every answer is the dashboard envelope
//
//	{"result": true, "msg": "...", "data": {"result": {"total": N, "result": [rows]}}}
//
// with snake_case rows; result=false, a non-200 status, HTML or an empty body
// are errors naming the URL.
package dashboard
