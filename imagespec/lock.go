package imagespec

import (
	"encoding/json"
	"fmt"
)

// EncodeLock is the set as compact JSON, the value of LabelLock.
func EncodeLock(set Set) []byte {
	b, err := json.Marshal(set)
	if err != nil {
		// Set holds only strings, slices and maps of strings.
		panic(fmt.Sprintf("imagespec: encoding Set: %v", err))
	}
	return b
}
