"""A job's working_dir module, as a user writes it: the Ray stand-in's
worker (smoke/probe/probetest's rayworker.py) runs f(7) and, with
RAY_DEBUG_POST_MORTEM=1, g(7), as Ray runs @ray.remote tasks."""


def f(x):
    breakpoint()  # imagectl-standin: stop here
    return x * x


def g(x):
    return x / (x - x)  # imagectl-standin: raise here
