package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// killDescendants sends SIGKILL to every process descended from imagectl
// (read from /proc) and to the process group of each one that leads a
// group of its own, so a grandchild that its killed parent leaves behind
// goes too.
func killDescendants() {
	self := os.Getpid()
	ownGroup := syscall.Getpgrp()
	children := map[int][]int{}
	groups := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(s[:strings.IndexByte(s, ' ')]))
		if err != nil {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		pgrp, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		groups[pid] = pgrp
	}
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			if pg := groups[c]; pg == c && pg != ownGroup {
				_ = syscall.Kill(-pg, syscall.SIGKILL)
			}
			_ = syscall.Kill(c, syscall.SIGKILL)
			walk(c)
		}
	}
	walk(self)
}
