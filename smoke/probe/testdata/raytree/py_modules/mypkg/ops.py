"""A module of a py_modules package."""


def double(x):
    breakpoint()
    return 2 * x


def fail(x):
    raise ValueError(f"bad input {x}")
