"""A stand-in for a Ray worker process: the attach probe's tests run it on
the machine, tests/kube/standin inside a real Ray head Pod.

It runs one task the way a Ray worker under a job's runtime_env does, with
the debugpy calls Ray makes (ray/util/rpdb.py and ray/util/debugpy.py, Ray
2.39 and later, RAY_DEBUG unset or 1):

- the worker's cwd is the job's working_dir package
  (.../runtime_resources/working_dir_files/_ray_pkg_<hash>/) and PYTHONPATH
  holds it (and the py_modules packages' directory when the job has one);
  whoever starts it does so;
- breakpoint() goes to set_trace (Ray sets PYTHONBREAKPOINT to
  ray.util.rpdb.set_trace, which calls ray.util.debugpy.set_trace): debugpy
  listens on the node's address and port 0, waits for a client, then
  pydevd.settrace(stop_at_frame=<caller of the helper>);
- with RAY_DEBUG_POST_MORTEM=1 a task that raises is frozen where Ray
  catches it (store_task_errors, inside the except block): the same listen
  and wait, then pydevd's stop_on_unhandled_exception with sys.exc_info(),
  then sys.excepthook.

Usage: rayworker.py MODULE FUNCTION ARG
It prints "Ray debugger is listening on HOST:PORT" when listening, then
"RESULT <value>" or "TASK ERROR <type>: <message>". Around the wait for a
client it prints "RAYWORKER paused" and "RAYWORKER resumed": where Ray's
worker_paused_by_debugger() raises and lowers the worker's
num_paused_threads in GCS (what the State API lists and the extension looks
for), so a host that fakes the State API can do the same.
"""
import contextlib
import importlib
import os
import sys
import threading
import traceback

import debugpy

POST_MORTEM = "post_mortem_error_uuid"
_port = None


def _open_port():
    global _port
    if _port is None:
        host, _port = debugpy.listen((os.environ.get("RAY_NODE_IP", "127.0.0.1"), 0))
        print(f"Ray debugger is listening on {host}:{_port}", flush=True)


def _stop_at_caller():
    import pydevd

    pydevd.settrace(stop_at_frame=sys._getframe().f_back)


def _stop_on_exception():
    import pydevd

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


@contextlib.contextmanager
def worker_paused_by_debugger():
    """ray._private.worker.Worker.worker_paused_by_debugger."""
    print("RAYWORKER paused", flush=True)
    try:
        yield
    finally:
        print("RAYWORKER resumed", flush=True)


def set_trace(breakpoint_uuid=None):
    """ray.util.debugpy.set_trace: listen, wait for the client, stop."""
    _open_port()
    sys.breakpointhook = set_trace
    with worker_paused_by_debugger():
        print("Waiting for debugger to attach...", flush=True)
        debugpy.wait_for_client()
    if breakpoint_uuid == POST_MORTEM:
        _stop_on_exception()
    else:
        _stop_at_caller()


def rpdb_set_trace(breakpoint_uuid=None):
    """ray.util.rpdb.set_trace, the PYTHONBREAKPOINT of a Ray worker."""
    if os.environ.get("RAY_DEBUG", "1") == "1":
        set_trace(breakpoint_uuid)


def main():
    module, function, arg = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sys.breakpointhook = rpdb_set_trace
    task = getattr(importlib.import_module(module), function)
    try:
        result = task(arg)
    except Exception as e:
        if os.environ.get("RAY_DEBUG_POST_MORTEM", "0") == "1":
            rpdb_set_trace(POST_MORTEM)
        print(f"TASK ERROR {type(e).__name__}: {e}", flush=True)
        traceback.print_exc()
        return
    print(f"RESULT {result}", flush=True)


if __name__ == "__main__":
    main()
