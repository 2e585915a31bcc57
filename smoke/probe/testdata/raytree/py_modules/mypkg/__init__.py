"""A package shipped with the job's py_modules."""
