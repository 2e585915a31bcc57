//go:build unix

package vsix_test

import "syscall"

func syscallUmask(m int) int { return syscall.Umask(m) }
