// Package pypitest is an in-process fake of pypi.org, the parts imagectl and
// pip read (see shared notes upstream-apis.md), answering as warehouse
// does (warehouse/api/simple.py, warehouse/packaging/utils.py,
// warehouse/views.py):
//
//	GET /simple/                        the project list
//	GET /simple/{project}/              a project's files, in the form the Accept
//	                                    header negotiates: PEP 691 JSON
//	                                    (application/vnd.pypi.simple.v1+json:
//	                                    meta.api-version "1.4", name, project-status,
//	                                    PEP 700 versions, files[{filename, url,
//	                                    hashes.sha256, requires-python, size,
//	                                    upload-time, yanked, data-dist-info-metadata,
//	                                    core-metadata, provenance}]), or PEP 503 HTML
//	                                    (<a href="URL#sha256=...">) when the Accept
//	                                    header is missing or names neither
//	GET /packages/{xx}/{filename}       the file: a valid minimal wheel whose METADATA
//	                                    carries File.Requires and File.Extras
//
// A project path without its trailing slash, or whose name is not the
// normalized one, is a 301 to the normalized path; an unknown project is
// the plain-text "404 Not Found". The JSON API that pypi.org still serves
// (GET /pypi/{project}/json, /pypi/{project}/{version}/json: {"info",
// "releases", "urls"}, files as {"filename", "packagetype",
// "python_version", "requires_python", "digests": {"sha256"}, "url",
// "yanked", "yanked_reason"}) is answered too, with PyPI's 404
// {"message": "Not Found"}.
//
// Every sha256 is that of the bytes served; Replace swaps a file's bytes. A
// fault hook can answer any request first, and every request is recorded
// with its time.
//
//	h := pypitest.New([]pypitest.Project{{Name: "ray", Releases: map[string][]pypitest.File{
//		"2.46.0": {pypitest.Wheel("ray-2.46.0-cp312-cp312-manylinux2014_x86_64.whl")},
//	}}})
//	srv := httptest.NewServer(h)
package pypitest
