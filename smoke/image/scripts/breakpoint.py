"""imagectl smoke image: a script paused at breakpoint() under debugpy.

Run by the image's own python3 as: breakpoint.py PORT
It does what Ray does for a task that calls breakpoint(): debugpy listens,
waits for a client, and breakpoint() (sys.breakpointhook = debugpy.breakpoint,
as PYTHONBREAKPOINT does for Ray workers) stops in smoke_target. imagectl
attaches over DAP, checks the frame, continues; the script then prints its
result and exits 0.
"""
import sys

import debugpy


def smoke_target(x):
    breakpoint()  # imagectl-smoke: stop here
    return x * x


def main():
    port = int(sys.argv[1])
    sys.breakpointhook = debugpy.breakpoint
    debugpy.listen(("0.0.0.0", port))
    print("IMAGECTL-SMOKE-LISTENING %d" % port, flush=True)
    debugpy.wait_for_client()
    print("IMAGECTL-SMOKE-RESULT %d" % smoke_target(7), flush=True)


if __name__ == "__main__":
    main()
