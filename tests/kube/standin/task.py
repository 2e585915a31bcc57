"""imagectl's Ray stand-in: one task paused as Ray pauses a task for its debugger.

Run by the stand-in's `ray start --head` with the image's own python3 as
    sample_code.py breakpoint|post-mortem NODE_IP
from the session's working_dir copy under /tmp/ray, where Ray puts a job's
working_dir (the code-server sidecar shares /tmp/ray, so the file opens there).

breakpoint: what ray.util.debugpy.set_trace does for a task that calls
breakpoint(): debugpy listens on the node's IP and port 0, the worker is
listed as paused until a client attaches, then debugpy.breakpoint() stops in
the task f (sys.breakpointhook = debugpy.breakpoint, as PYTHONBREAKPOINT
makes it for a Ray worker).

post-mortem: what ray.util.debugpy._post_mortem does with
RAY_DEBUG_POST_MORTEM=1 for a task that raises: inside the except block
debugpy listens, the worker is paused until a client attaches, then pydevd's
stop_on_unhandled_exception freezes the task on the exception raised in g.

Each step is one line on stdout the stand-in reads: LISTENING <port>,
ATTACHED, then RESULT <value> or TASK-ERROR <exception type>.
"""
import sys
import threading

import debugpy


def report(*words):
    print("IMAGECTL-STANDIN", *words, flush=True)


def f(x):
    breakpoint()  # imagectl-standin: stop here
    return x * x


def g(x):
    return x / (x - x)  # imagectl-standin: raise here


def listen(node_ip):
    _, port = debugpy.listen((node_ip, 0))
    report("LISTENING", port)
    debugpy.wait_for_client()
    report("ATTACHED")


def post_mortem(node_ip):
    listen(node_ip)
    import pydevd  # after debugpy.listen, which loads debugpy's own copy

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
    mode, node_ip = sys.argv[1], sys.argv[2]
    sys.breakpointhook = debugpy.breakpoint
    if mode == "post-mortem":
        try:
            g(7)
        except Exception as e:
            post_mortem(node_ip)
            report("TASK-ERROR", type(e).__name__)
        return
    listen(node_ip)
    report("RESULT", f(7))


if __name__ == "__main__":
    main()
