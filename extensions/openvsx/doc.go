// Package openvsx is a client for the Open VSX registry REST API
// (eclipse/openvsx RegistryAPI): it lists every version of an extension with
// its platform builds (GET /api/{ns}/{name}/versions, then the per-version
// JSON with its downloads map) and downloads one platform build, checking it
// against the digest Open VSX publishes (files.sha256 is a URL to a text file
// holding the hex digest).
//
// The base URL is configurable (default https://open-vsx.org). Every call goes
// through upstream/httpx.
package openvsx
