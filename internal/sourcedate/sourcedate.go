package sourcedate

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Env is the environment variable.
const Env = "SOURCE_DATE_EPOCH"

// Max is the latest accepted Unix time, 2242-03-16T12:56:31Z (see the
// package documentation).
const Max int64 = 1<<33 - 1

// maxDigits bounds the input before it is parsed.
const maxDigits = 20

// Parse reads a SOURCE_DATE_EPOCH value given by source (an environment
// variable or a flag, named in the error).
func Parse(source, v string) (time.Time, error) {
	bad := func() (time.Time, error) {
		shown := v
		if len(shown) > maxDigits+4 {
			shown = shown[:maxDigits+4] + "..."
		}
		return time.Time{}, fmt.Errorf("%s=%q: want a Unix time in seconds from 0 to %d (%s)", source, shown, Max, time.Unix(Max, 0).UTC().Format(time.RFC3339))
	}
	if v == "" || len(v) > maxDigits {
		return bad()
	}
	for _, c := range v {
		if c < '0' || c > '9' { // no sign, space, fraction or exponent
			return bad()
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > Max {
		return bad()
	}
	return time.Unix(n, 0).UTC(), nil
}

// Resolve returns the time named by the first of these that is set: flag
// (the value of the command-line flag flagName), $SOURCE_DATE_EPOCH, and
// fallback (called only then; it returns what it describes, e.g. "git
// commit time", and the value, or "" for none). With none set it is the
// Unix epoch. Any value that is set must be valid.
func Resolve(flagName, flag string, fallback func() (source, value string)) (time.Time, error) {
	if flag != "" {
		return Parse(flagName, flag)
	}
	if v := os.Getenv(Env); v != "" {
		return Parse(Env, v)
	}
	if fallback != nil {
		if source, v := fallback(); v != "" {
			return Parse(source, v)
		}
	}
	return time.Unix(0, 0).UTC(), nil
}

// FromEnv is Resolve with only $SOURCE_DATE_EPOCH: the time it names, or
// the Unix epoch when it is unset or empty.
func FromEnv() (time.Time, error) { return Resolve("", "", nil) }
