"""A job's driver for the Ray stand-in (tests/kube/standin): it asks the head
for one task, as a Ray driver's `ray.get(f.options(resources={...}).remote(7))`
does, prints the task's output as Ray's log_to_driver does, and fails when the
task did (ray.get raises the task's exception).

Usage: python3 driver.py MODULE FUNCTION ARG [NAME=AMOUNT ...]

The task is smoke/probe/probetest's rayworker.py MODULE FUNCTION ARG, run
under the job's runtime_env on a node that has the resources NAME=AMOUNT (none:
any node, the head first). The request goes to the head's GCS address, which
the stand-in's job supervisor puts in RAY_ADDRESS as Ray does, with the job's
submission ID from RAY_JOB_CONFIG_JSON_ENV_VAR (its metadata's
job_submission_id, as Ray's JobSupervisor sets it); the protocol is described
in the stand-in's cluster.go.
"""
import json
import os
import sys
import urllib.error
import urllib.request


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    module, function, arg = sys.argv[1:4]
    resources = {}
    for r in sys.argv[4:]:
        name, sep, amount = r.partition("=")
        if not sep:
            sys.exit(f"driver.py: resource {r!r}: want NAME=AMOUNT")
        resources[name] = float(amount)
    config = json.loads(os.environ["RAY_JOB_CONFIG_JSON_ENV_VAR"])
    body = json.dumps({
        "submission_id": config["metadata"]["job_submission_id"],
        "args": [module, function, arg],
        "resources": resources,
    }).encode()
    url = "http://" + os.environ["RAY_ADDRESS"] + "/standin/v1/tasks"
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    # The stream stays quiet while a debugger keeps the task paused: the
    # timeout bounds each read, not the task.
    try:
        resp = urllib.request.urlopen(req, timeout=900)
    except urllib.error.HTTPError as e:
        sys.exit(f"driver.py: POST {url}: {e.code} {e.read().decode(errors='replace').strip()}")
    ok, code = False, None
    with resp:
        for raw in resp:
            ev = json.loads(raw)
            if "node_id" in ev:
                print(f"driver.py: task {function} runs on node {ev['node_id'][:8]} ({ev['node_ip']})", flush=True)
            elif "line" in ev:
                print(ev["line"], flush=True)
                ok = ok or ev["line"].startswith("RESULT ")
            elif "error" in ev:
                sys.exit(f"driver.py: task {function}: {ev['error']}")
            elif "exit" in ev:
                code = ev["exit"]
    if code is None:
        sys.exit(f"driver.py: task {function}: the head's stream ended without the task's exit")
    sys.exit(0 if code == 0 and ok else 1)


if __name__ == "__main__":
    main()
