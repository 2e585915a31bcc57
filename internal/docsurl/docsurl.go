// Package docsurl links the project's documentation from the messages a
// user of the binary reads. The binary ships without docs/, so a message
// names a page by its URL on the project's home, never by its path in a
// checkout.
package docsurl

// Home is the project's repository (matrix.yaml image.source and the Go
// module path name the same one; a test checks).
const Home = "https://github.com/imagectl/imagectl"

// URL is docs/page (".md" included) on the default branch at a section's
// GitHub heading anchor ("" for the top of the page).
func URL(page, anchor string) string {
	u := Home + "/blob/main/docs/" + page
	if anchor != "" {
		u += "#" + anchor
	}
	return u
}

// The sections messages point at (a test checks each page and heading
// exists).
var (
	// InjectHardenedPods is docs/inject.md, Hardened pods.
	InjectHardenedPods = URL("inject.md", "hardened-pods")
	// InjectTokenAuth is docs/inject.md, Ray token authentication.
	InjectTokenAuth = URL("inject.md", "ray-token-authentication")
	// CLIRenamedFlags is docs/cli.md, Renamed and removed flags.
	CLIRenamedFlags = URL("cli.md", "renamed-and-removed-flags")
)
