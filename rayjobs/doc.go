// Package rayjobs submits a job to a Ray cluster through the dashboard's
// Jobs REST API exactly as Ray's own Python SDK (ray.job_submission's
// JobSubmissionClient) does, with no Ray installed locally.
//
// Read from Ray's source at commit 5c47023856423b87afe3abe3b6c30c9782120665
// (ray-project/ray master, 2025-05-05, the week Ray 2.46.0 was released;
// the ray-2.46.0 tag itself could not be fetched here, and none of the
// files below changed in a way that matters to this package between
// 2025-04-17 and 2025-06-24):
//
//   - python/ray/_private/runtime_env/packaging.py: Package reproduces
//     get_uri_for_directory (_hash_directory, _dir_travel, _get_excludes,
//     _get_gitignore) and create_package (_zip_files): the same
//     gcs://_ray_pkg_<16 hex digits>.zip URI for the same directory, the
//     same zip entries (names, modes, sizes, contents, timestamps, header
//     fields). Ray's zip records each file's mtime in local time and lists a
//     directory in the file system's order, so two machines give the same
//     entries but not always the same bytes; Package sorts names. Given the
//     order Ray's os.scandir gave, the bytes are Ray's, byte for byte (the
//     tests replay it).
//   - python/ray/dashboard/modules/dashboard_sdk.py (SubmissionClient) and
//     job/sdk.py (JobSubmissionClient): PrepareRuntimeEnv and Submit upload
//     local working_dir and py_modules as _upload_working_dir_if_needed and
//     _upload_py_modules_if_needed do (GET /api/packages/… first, PUT only
//     when the cluster answers 404), then POST /api/jobs/ with the body
//     submit_job sends.
//   - python/ray/dashboard/modules/job/job_head.py, job_agent.py,
//     common.py, pydantic_models.py: the paths, methods, status codes and
//     JSON bodies (see debug/dashboard/dashboardtest, which serves them).
//
// Every request carries the caller's context and a timeout; errors name
// the URL, the status and the end of Ray's answer (usually a Python
// traceback whose last line is the cause). A POST (submit, stop) is never
// retried; GET and PUT are, on connection errors and 5xx.
//
// Not done here, as in the SDK: the version checks JobSubmissionClient's
// constructor makes (Ray 1.9 and 2.0: call CheckVersion), client-wide
// metadata merged into every job, following the logs over the WebSocket
// /api/jobs/{id}/logs/tail (Logs returns them so far), and uploading a
// local .zip working_dir or a single .py py_module, which the SDK cannot
// do either.
package rayjobs
