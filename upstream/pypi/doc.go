// Package pypi reads the releases of a PyPI project from the Simple API's
// JSON form (PEP 691, GET {base}/simple/{project}/ with Accept:
// application/vnd.pypi.simple.v1+json, major API version 1, with PEP 700's
// versions): each file's filename, requires-python and yanked say which
// CPython versions each release ships wheels for on each OCI platform. The
// JSON API (/pypi/{project}/json), whose releases key is deprecated, is not
// read: the Simple API has every fact imagectl records.
package pypi
