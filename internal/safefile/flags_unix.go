//go:build unix

package safefile

import (
	"errors"
	"syscall"
)

// openFlags: O_NONBLOCK so that opening a FIFO never waits for a writer
// (regular files ignore it); O_CLOEXEC is added by package os.
const (
	openFlags    = syscall.O_NONBLOCK
	noFollowFlag = syscall.O_NOFOLLOW
)

// isLinkLoop reports the error open(2) gives for a symbolic link under
// O_NOFOLLOW.
func isLinkLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
