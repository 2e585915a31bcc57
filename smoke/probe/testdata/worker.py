"""A stand-in for a Ray worker paused at breakpoint(), for the attach probe tests.

It does what ray.util.rpdb does when RAY_DEBUG is unset or 1: listen with
debugpy on an address and a random port, report the port, wait for a client,
then stop inside the task function. Run with Debian's /usr/bin/python3 and its
python3-debugpy.

Usage: worker.py MODE PORTFILE
  MODE break  - stop at debugpy.breakpoint() inside f(x), then print RESULT 49 (f(7))
  MODE nostop - wait for a client, then never stop (sleeps until killed)
The port is written to PORTFILE (temp file + rename) and printed on stdout.
"""
import os
import sys
import time

import debugpy


def f(x):
    debugpy.breakpoint()
    y = x * x
    return y


def main():
    mode, portfile = sys.argv[1], sys.argv[2]
    host, port = debugpy.listen(("127.0.0.1", 0))
    print(f"Ray debugger is listening on {host}:{port}", flush=True)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(f"{port}\n")
    os.rename(tmp, portfile)
    print("Waiting for debugger to attach...", flush=True)
    debugpy.wait_for_client()
    if mode == "nostop":
        while True:
            time.sleep(1)
    print(f"RESULT {f(7)}", flush=True)


if __name__ == "__main__":
    main()
