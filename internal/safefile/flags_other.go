//go:build !unix

package safefile

const (
	openFlags    = 0
	noFollowFlag = 0
)

func isLinkLoop(error) bool { return false }
