package cache

import (
	"os"
	"syscall"
)

// changeTime is fi's inode change time (st_ctim): every write, chmod,
// rename or utimes moves it, and nothing can set it back.
func changeTime(fi os.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ctim.Nano(), true
}
