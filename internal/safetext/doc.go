// Package safetext makes untrusted text safe to print and strips secrets
// from what imagectl prints or stores.
//
// Sanitize replaces terminal control characters (escape sequences, carriage
// returns, C1 controls, bidirectional overrides) and invalid UTF-8 in text
// that came from an upstream (an HTTP error body, a publisher name in a
// VSIX) with visible escapes, so that it cannot rewrite the terminal.
// URL and Redact remove the userinfo (user:password@) of URLs, in a URL
// string or anywhere in a message; Handler applies both to every log record.
// They are the one place this is done: HTTP errors, logs, the cache index and
// the CLI's final error line all go through them.
package safetext
