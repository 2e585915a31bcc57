"""imagectl smoke image: a script paused under debugpy as a Ray task is.

Run by the image's own python3 as: breakpoint.py PORT [post-mortem]
It does what Ray does for a task that calls breakpoint(): debugpy listens,
waits for a client, and breakpoint() (sys.breakpointhook = debugpy.breakpoint,
as PYTHONBREAKPOINT does for Ray workers) stops in smoke_target. imagectl
attaches over DAP, checks the frame, continues; the script then prints its
result and exits 0.

With post-mortem it does what Ray does with RAY_DEBUG_POST_MORTEM=1 for a
task that raises (ray.util.debugpy._post_mortem, called inside the except
block): debugpy listens, waits for a client, then pydevd's
stop_on_unhandled_exception with sys.exc_info() freezes the task on the
exception in smoke_fail; after continue it calls sys.excepthook, prints the
task error and exits 0.
"""
import sys
import threading

import debugpy


def smoke_target(x):
    breakpoint()  # imagectl-smoke: stop here
    return x * x


def smoke_fail(x):
    raise ValueError("imagectl smoke: task failed on %d" % x)  # imagectl-smoke: raise here


def post_mortem():
    import pydevd

    debugpy.wait_for_client()
    py_db = pydevd.get_global_debugger()
    thread = threading.current_thread()
    info = py_db.set_additional_thread_info(thread)
    info.is_tracing += 1
    try:
        error = sys.exc_info()
        py_db.stop_on_unhandled_exception(py_db, thread, info, error)
        sys.excepthook(error[0], error[1], error[2])
    finally:
        info.is_tracing -= 1


def main():
    port = int(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "breakpoint"
    sys.breakpointhook = debugpy.breakpoint
    debugpy.listen(("0.0.0.0", port))
    print("IMAGECTL-SMOKE-LISTENING %d" % port, flush=True)
    if mode == "post-mortem":
        try:
            smoke_fail(7)
        except Exception as e:
            post_mortem()
            print("IMAGECTL-SMOKE-TASK-ERROR %s" % type(e).__name__, flush=True)
        return
    debugpy.wait_for_client()
    print("IMAGECTL-SMOKE-RESULT %d" % smoke_target(7), flush=True)


if __name__ == "__main__":
    main()
