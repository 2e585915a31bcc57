// Package regauthtest puts token authentication in front of an OCI registry
// handler (go-containerregistry's registry.New()), the way Docker Hub asks for
// it, so tests prove that imagectl and BuildKit really log in:
//
//   - every /v2/ request without a valid bearer token gets 401 with
//     `WWW-Authenticate: Bearer realm="<server>/token",service="...",scope="repository:NAME:ACTIONS"`
//     and a distribution-spec UNAUTHORIZED error body;
//   - basic credentials on /v2/ itself are refused, as on Docker Hub: the client
//     must exchange them at the realm;
//   - the token endpoint checks basic credentials, rejects wrong ones with 401,
//     and issues a token scoped to the repositories and actions requested (an
//     anonymous request gets a token with no access, or pull access with
//     WithAnonymousPull);
//   - a token without the action a request needs gets 401 with
//     error="insufficient_scope"; a cross-repository mount whose source the
//     token may not pull falls back to a plain upload, as on real registries.
//
// It is test scaffolding, not part of imagectl.
package regauthtest
