"""A module of the job's working_dir."""


def cube(x):
    breakpoint()
    return x * x * x
