// Package marketplace is a client for the Visual Studio Marketplace gallery
// API: it lists every version of an extension with its platform builds
// (POST {base}/_apis/public/gallery/extensionquery, flags 179) and downloads
// the VSIX built for one target platform
// ({base}/_apis/public/gallery/publishers/{pub}/vsextensions/{name}/{ver}/vspackage?targetPlatform=...).
//
// The base URL is configurable so tests and mirrors can stand in for
// https://marketplace.visualstudio.com. Every call goes through upstream/httpx
// (retries, Retry-After, per-attempt timeout).
package marketplace
