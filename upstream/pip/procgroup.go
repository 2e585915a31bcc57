package pip

import (
	"os/exec"
	"syscall"
	"time"
)

// groupWaitDelay bounds how long a cancelled pip run waits for its output
// pipes to close once its process group has been killed.
const groupWaitDelay = 2 * time.Second

// killGroupOnCancel runs cmd in a process group of its own and, when its
// context ends, kills the whole group: pip started through a wrapper
// script (python3 as a shell script, pyenv's shims) is a grandchild that
// would otherwise outlive the killed wrapper and hold the output pipes
// open until it finished by itself.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = groupWaitDelay
}
