// Package regauth is how imagectl authenticates to container registries,
// defined once for every registry read and write (BuildKit's push excepted:
// package build hands the same docker config to BuildKit's session).
//
// Credentials come from the docker config keychain: $DOCKER_CONFIG/config.json,
// else ~/.docker/config.json, with `auths`, `credsStore` and `credHelpers`,
// exactly what `docker login` and docker/login-action write. A registry that
// allows anonymous access still works without any.
//
// Transport is the HTTP transport under every registry client
// (RemoteOptions, CheckPush, upstream/registry): the credentials go only over
// TLS, or over plain HTTP only to the registry host itself where plain HTTP
// is allowed; a challenge naming a plain-HTTP token realm anywhere else is
// refused before anything is sent there. Each request waits at most
// ResponseHeaderTimeout for its answer, and a long wait is reported to the
// command's internal/waitnotice.Notice.
//
// CheckPush is the push preflight: before any work it asks the registry for a
// push-scoped token and opens (then cancels) a blob upload, so a missing or
// wrong login fails in seconds with one line naming the registry, instead of
// after a build.
package regauth
