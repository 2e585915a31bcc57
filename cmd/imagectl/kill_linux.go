package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// proc is one process as /proc shows it. start (clock ticks since boot)
// tells it apart from a later process that was given the same pid.
type proc struct {
	pid, ppid, pgrp int
	start           uint64
}

// readProc reads /proc/PID/stat.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	start, err3 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp, start: start}, true
}

// killDescendants sends SIGKILL to every process descended from imagectl
// (read from /proc) and to the process group of each one that leads a
// group of its own, so a grandchild that its killed parent leaves behind
// goes too. A process is killed only while it is still the one read
// (killProc).
func killDescendants() {
	ownGroup := syscall.Getpgrp()
	children := map[int][]proc{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			killProc(c, c.pgrp == c.pid && c.pgrp != ownGroup)
			walk(c.pid)
		}
	}
	walk(os.Getpid())
}

// killProc sends SIGKILL to p, and with group to its process group, if p
// is still the process read: a process that ended and was reaped since,
// its pid given to another, is left alone. The signal goes through a
// pidfd opened before the start time is compared, so it reaches p or
// nothing; the group is signalled while p, its leader, is known alive
// (a group's id is not reused while any member lives). Without a pidfd
// (Linux before 5.3, or none to be had: EMFILE) the start time is compared
// just before kill(2).
func killProc(p proc, group bool) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // gone
	}
	if err == nil {
		defer unix.Close(fd)
	}
	if now, ok := readProc(p.pid); !ok || now.start != p.start {
		return
	}
	if group {
		_ = syscall.Kill(-p.pgrp, syscall.SIGKILL)
	}
	if err == nil {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		return
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
}
