// Package httpx builds the HTTP client every upstream call goes through: a
// go-retryablehttp client with a per-attempt timeout, a bounded number of
// retries on connection errors, 429 and 5xx, and a backoff that honours
// Retry-After. It also holds the body checks shared by all upstream clients.
package httpx
