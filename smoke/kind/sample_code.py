"""The smoke job's driver: four Ray tasks that stop at breakpoint(), then
one that raises under post-mortem debugging.

Each f(x) pauses in Ray's debugpy debugger (RAY_DEBUG unset or 1,
debugpy>=1.8.0 from the job's runtime env) until a client attaches and
continues; the harness attaches once per task from the code-server sidecar.
Then g(0) raises ZeroDivisionError; with RAY_DEBUG_POST_MORTEM=1 in the
runtime env the task freezes at the exception until a client attaches
(imagectl smoke attach --post-mortem) and continues, and the exception then
reaches the driver as usual.

The job's expected output has the lines "RESULT [0, 1, 4, 9]" and
"POST-MORTEM ZeroDivisionError".
"""
import ray


@ray.remote(num_cpus=1)
def f(x):
    breakpoint()
    return x * x


@ray.remote(num_cpus=1, max_retries=0)
def g(x):
    return 1 / x


def main():
    ray.init()
    result = ray.get([f.remote(i) for i in range(4)])
    print(f"RESULT {result}", flush=True)
    try:
        ray.get(g.remote(0))
    except ZeroDivisionError as e:
        print(f"POST-MORTEM {type(getattr(e, 'cause', e)).__name__}", flush=True)


if __name__ == "__main__":
    main()
