package verify_test

import "time"

var testTime = time.Unix(1748736000, 0)
