// Package pypi is an in-process fake of the PyPI JSON API, the part imagectl
// reads (see shared notes upstream-apis.md):
//
//	GET /pypi/{project}/json            {"info": {...}, "releases": {version: [file...]}, "urls": [file...]}
//	GET /pypi/{project}/{version}/json  {"info": {...}, "urls": [file...]}
//
// where a file is {"filename", "packagetype", "python_version",
// "requires_python", "digests": {"sha256"}, "url", "yanked", "yanked_reason"}
// as PyPI sends it, and the simple API and the files, so that pip itself can
// resolve and download from the fake:
//
//	GET /simple/                        PEP 503 project list
//	GET /simple/{project}/              PEP 503 HTML (<a href="URL#sha256=...">), or PEP 691
//	                                    JSON with Accept: application/vnd.pypi.simple.v1+json
//	GET /packages/{xx}/{filename}       the file: a valid minimal wheel whose METADATA
//	                                    carries File.Requires and File.Extras
//
// Every sha256 is that of the bytes served; Replace swaps a file's bytes. Unknown projects and versions get PyPI's 404 answer
// {"message": "Not Found"}. A fault hook can answer any request first, and
// every request is recorded with its time.
//
//	h := pypi.New([]pypi.Project{{Name: "ray", Releases: map[string][]pypi.File{
//		"2.46.0": {pypi.Wheel("ray-2.46.0-cp312-cp312-manylinux2014_x86_64.whl")},
//	}}})
//	srv := httptest.NewServer(h)
package pypi
