// Package httpx builds the HTTP client every upstream call goes through: a
// go-retryablehttp client with a bounded number of retries on connection
// errors, 429 and 5xx, and a backoff that honours Retry-After. One attempt
// is bounded in two phases, like go-containerregistry's and curl's speed
// limits rather than a whole-request timeout: the wait for the response
// headers (WithTimeout), then every gap in the body (WithIdleTimeout: no
// byte for that long fails the read), so a slow but steady transfer is never
// cut and a stalled one always is. The caller's context bounds the whole
// call. It also holds the body checks shared by all upstream clients.
package httpx
