// Package dashboard is an in-process fake of the Ray dashboard HTTP API, the
// part the Ray Distributed Debugger extension and imagectl's attach probe
// use: GET /cluster_id and the State API list endpoints /api/v0/workers and
// /api/v0/tasks, answering in the real envelope
//
//	{"result": true, "msg": "...", "data": {"result": {"total": N, "num_after_truncation": N,
//	  "num_filtered": N, "result": [rows], "partial_failure_warning": "", "warnings": null}}}
//
// with snake_case rows, and applying the filter_keys / filter_predicates /
// filter_values, exclude_driver and limit parameters the way Ray does. It
// can also misbehave (HTML page, HTTP 500) and records every request.
package dashboard
