"""The job's entrypoint (python driver.py), shipped in its working_dir."""
import helpers
from mypkg import ops


def square(x):
    breakpoint()
    return x * x


def divide(x):
    return 10 // (x - x)


if __name__ == "__main__":
    print(square(3), helpers.cube(2), ops.double(4))
