package image

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// dialInNetns connects to addr from inside the network namespace at nsPath:
// a goroutine locked to its OS thread enters the namespace, creates the
// socket (a socket belongs to the namespace it was created in), and goes
// back. If going back fails the thread stays locked and is discarded when
// the goroutine ends, so no other goroutine ever runs in the container's
// namespace.
func dialInNetns(ctx context.Context, nsPath, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("opening this thread's network namespace: %w", err)}
			return
		}
		defer orig.Close()
		ns, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("opening the container's network namespace: %w", err)}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("entering the container's network namespace %s: %w", nsPath, err)}
			return
		}
		var d net.Dialer
		c, derr := d.DialContext(ctx, "tcp", addr)
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Stay locked: the thread ends with this goroutine.
			if c != nil {
				c.Close()
			}
			ch <- result{err: fmt.Errorf("leaving the container's network namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{c, derr}
	}()
	r := <-ch
	return r.c, r.err
}
