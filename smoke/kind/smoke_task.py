"""The smoke job's driver: four Ray tasks that each stop at breakpoint().

Each task f(x) pauses in Ray's debugpy debugger (RAY_DEBUG unset or 1,
debugpy>=1.8.0 from the job's runtime env) until a client attaches and
continues; the harness attaches once per task from the code-server sidecar.
The job's expected output is the line "RESULT [0, 1, 4, 9]".
"""
import ray


@ray.remote(num_cpus=1)
def f(x):
    breakpoint()
    return x * x


def main():
    ray.init()
    result = ray.get([f.remote(i) for i in range(4)])
    print(f"RESULT {result}", flush=True)


if __name__ == "__main__":
    main()
