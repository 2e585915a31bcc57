// Package dashboardtest is an in-process fake of the Ray dashboard HTTP API, the
// part the Ray Distributed Debugger extension and imagectl's attach probe
// use: GET /cluster_id and the State API list endpoints /api/v0/workers and
// /api/v0/tasks, answering in the real envelope
//
//	{"result": true, "msg": "...", "data": {"result": {"total": N, "num_after_truncation": N,
//	  "num_filtered": N, "result": [rows], "partial_failure_warning": "", "warnings": null}}}
//
// with snake_case rows, and applying the filter_keys / filter_predicates /
// filter_values, exclude_driver and limit parameters the way Ray does
// (exclude_driver drops DRIVER_TASK rows from tasks; Ray's workers list
// ignores it, so a paused driver is listed). It
// can also misbehave (HTML page, HTTP 500) and records every request.
//
// It also serves Ray's Jobs API as python/ray/dashboard/modules/job/
// job_head.py does (jobs.go cites the file and line of each behaviour, at
// Ray commit 5c47023856, May 2025): GET /api/version, GET and PUT
// /api/packages/{protocol}/{name}, POST and GET /api/jobs/, GET and DELETE
// /api/jobs/{id}, GET /api/jobs/{id}/logs and POST /api/jobs/{id}/stop, as
// strict as Ray (an unknown field in a submission is a 400, a duplicate
// submission_id a 500, a job whose package was never uploaded fails). A
// job stays PENDING unless a runner (SetJobRunner) or the test moves it
// (UpdateJob). The log-tailing WebSocket is not served.
//
// SetAuthToken turns on Ray's token authentication (RAY_AUTH_MODE=token,
// Ray >= 2.52) as the dashboard's aiohttp middleware does it (auth.go
// cites the files and commits): before any route or Mode, a request to a
// path other than the public ones ("/", "/favicon.ico",
// "/api/authentication_mode", "/api/authenticate", "/api/healthz",
// "/api/gcs_healthz", "/api/local_raylet_healthz", "/-/healthz" and the
// prefix "/static/") takes its credential from the Authorization header,
// else (absent or empty) from X-Ray-Authorization, else from the
// ray-authentication-token cookie (the bare token, to which "Bearer " is
// prepended). No value at all: 401 "Unauthorized: Missing authentication
// token". A value that is not "Bearer " (that case, one space) followed by
// the token exactly: 403 "Forbidden: Invalid authentication token". Both
// bodies are text/plain; charset=utf-8, with no newline. The first header
// given wins even when it is wrong and a later one is right.
package dashboardtest
