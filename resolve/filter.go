package resolve

// A check says why a candidate is rejected, or "" when it passes. The
// reason is what --explain prints after "<component> <version> rejected: ".
type check[T any] func(T) string

// reject runs checks in order and returns the first reason, or "".
func reject[T any](c T, checks []check[T]) string {
	for _, ck := range checks {
		if reason := ck(c); reason != "" {
			return reason
		}
	}
	return ""
}

// first walks candidates in the order given (newest first) and returns the
// index of the first that passes every check (-1 if none does) and why each
// candidate before it was rejected: the Rejected list of its Decision, or of
// the ConflictError when none passes. Checks run in order and stop at the
// first reason, so a check may rely on the ones before it having passed.
func first[T any](candidates []T, version func(T) string, checks ...check[T]) (int, []Rejection) {
	var rejected []Rejection
	for i, c := range candidates {
		reason := reject(c, checks)
		if reason == "" {
			return i, rejected
		}
		rejected = append(rejected, Rejection{Version: version(c), Reason: reason})
	}
	return -1, rejected
}

// filter returns every candidate that passes every check, in order, and why
// each other candidate was rejected.
func filter[T any](candidates []T, version func(T) string, checks ...check[T]) (kept []T, rejected []Rejection) {
	for _, c := range candidates {
		if reason := reject(c, checks); reason != "" {
			rejected = append(rejected, Rejection{Version: version(c), Reason: reason})
			continue
		}
		kept = append(kept, c)
	}
	return kept, rejected
}

// rejectIf is a check that rejects a candidate for which bad holds, saying
// reason.
func rejectIf[T any](bad func(T) bool, reason string) check[T] {
	return func(c T) string {
		if bad(c) {
			return reason
		}
		return ""
	}
}

// rejectErr is a check that rejects a candidate for which f fails, saying
// the error.
func rejectErr[T any](f func(T) error) check[T] {
	return func(c T) string {
		if err := f(c); err != nil {
			return err.Error()
		}
		return ""
	}
}
