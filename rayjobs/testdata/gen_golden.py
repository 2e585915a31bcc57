"""Runs Ray's own packaging code on the test directories and writes goldens.

Usage (gen-golden.sh runs it): RAY_SRC=<an extracted Ray source tree>
/usr/bin/python3 gen_golden.py TESTDATA OUTDIR

It imports RAY_SRC's python/ray/_private/runtime_env/packaging.py unchanged,
with the pathspec copy Ray vendors (python/ray/_private/thirdparty/pathspec)
and Ray's runtime_env/protocol.py, also unchanged. Only packaging.py's imports
of other Ray internals are stubbed, by modules this script writes to a
temporary directory at run time: ray.util.annotations (DeveloperAPI),
ray._private.ray_constants (the constants packaging.py names, their values
read from RAY_SRC's ray_constants.py), ray._private.runtime_env.conda_utils,
ray._private.runtime_env.default_impl, ray.experimental.internal_kv,
ray._raylet and ray._private.path_utils (newer Ray); none of them takes part
in hashing or zipping. filelock is the real library (Debian's
python3-filelock).

For every case of cases.json it calls packaging.get_uri_for_directory and
packaging.create_package on a copy of dirs/ prepared as setup.txt says, with
TZ=UTC, and writes OUTDIR/<case>.json: the URI, and the zip's entries as
Python's zipfile reads them back (every header field and the content),
sorted by name. Ray lists a directory in the file system's order and stores
each file's mtime, so the zip's bytes depend on the machine; the entries do
not. The order Ray used here is "ray_order" and the zip's bytes "zip": with
the same order (and setup.txt's mtimes, TZ=UTC) the Go test expects the same
bytes.
"""

import ast
import base64
import json
import os
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

STUBS = {
    "ray/__init__.py": "",
    "ray/util/__init__.py": "",
    "ray/util/annotations.py": (
        "def DeveloperAPI(*args, **kwargs):\n"
        "    if len(args) == 1 and not kwargs and callable(args[0]):\n"
        "        return args[0]\n"
        "    return lambda f: f\n"
        "PublicAPI = DeveloperAPI\n"
    ),
    "ray/_private/__init__.py": "",
    "ray/_private/runtime_env/__init__.py": "",
    "ray/_private/runtime_env/conda_utils.py": (
        "def exec_cmd_stream_to_logger(*a, **k):\n"
        "    raise NotImplementedError('stub: not used for packaging')\n"
    ),
    "ray/_private/runtime_env/default_impl.py": (
        "def get_protocols_provider():\n"
        "    from ray._private.runtime_env.protocol import ProtocolsProvider\n"
        "    return ProtocolsProvider\n"
    ),
    "ray/_private/path_utils.py": (
        "from urllib.parse import urlparse\n"
        "def is_path(s):\n"
        "    return not urlparse(s).scheme\n"
    ),
    "ray/experimental/__init__.py": "",
    "ray/experimental/internal_kv.py": (
        "def _stub(*a, **k):\n"
        "    raise NotImplementedError('stub: the GCS is not used for packaging')\n"
        "_internal_kv_exists = _internal_kv_put = _internal_kv_get = _pin_runtime_env_uri = _stub\n"
    ),
    "ray/_raylet.py": "class GcsClient:\n    pass\n",
}

# Constants packaging.py imports from ray_constants, read from RAY_SRC.
CONSTANTS = [
    "RAY_RUNTIME_ENV_URI_PIN_EXPIRATION_S_DEFAULT",
    "RAY_RUNTIME_ENV_URI_PIN_EXPIRATION_S_ENV_VAR",
    "RAY_RUNTIME_ENV_IGNORE_GITIGNORE",
    "GRPC_CPP_MAX_MESSAGE_SIZE",
]


def constants_module(ray_src):
    tree = ast.parse((ray_src / "python/ray/_private/ray_constants.py").read_text())
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in CONSTANTS:
                values[name] = eval(compile(ast.Expression(node.value), "ray_constants", "eval"), {})
    missing = [c for c in CONSTANTS if c not in values]
    if missing:
        # Only what this packaging.py imports matters; a missing one fails
        # the import below with a clear ImportError.
        print(f"note: ray_constants.py defines none of {missing} as a literal", file=sys.stderr)
    return "".join(f"{k} = {v!r}\n" for k, v in values.items())


def build_ray_package(ray_src, root):
    for rel, text in STUBS.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "ray/_private/ray_constants.py").write_text(constants_module(ray_src))
    real = ray_src / "python/ray/_private"
    shutil.copy(real / "runtime_env/packaging.py", root / "ray/_private/runtime_env/packaging.py")
    shutil.copy(real / "runtime_env/protocol.py", root / "ray/_private/runtime_env/protocol.py")
    (root / "ray/_private/thirdparty").mkdir(parents=True, exist_ok=True)
    (root / "ray/_private/thirdparty/__init__.py").write_text("")
    shutil.copytree(real / "thirdparty/pathspec", root / "ray/_private/thirdparty/pathspec")


def prepare(testdata, work):
    dirs = work / "dirs"
    shutil.copytree(testdata / "dirs", dirs, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(dirs):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)
    mtime = None
    for line in (testdata / "setup.txt").read_text().splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "mkdir":
            (dirs / f[1]).mkdir()
        elif f[0] == "symlink":
            os.symlink(f[2], dirs / f[1])
        elif f[0] == "chmod":
            os.chmod(dirs / f[1], int(f[2], 8))
        elif f[0] == "mtime":
            mtime = int(f[1])
        else:
            raise SystemExit(f"setup.txt: unknown line {line!r}")
    if mtime is not None:
        paths = [dirs]
        for dirpath, dirnames, filenames in os.walk(dirs):
            paths += [Path(dirpath) / n for n in dirnames + filenames]
        for p in paths:
            os.utime(p, (mtime, mtime), follow_symlinks=False)
    return dirs


def entries(zip_path):
    import zipfile

    out, order = [], []
    with zipfile.ZipFile(zip_path) as z:
        for i in z.infolist():
            order.append(i.filename)
            out.append({
                "name": i.filename,
                "flag_bits": i.flag_bits,
                "compress_type": i.compress_type,
                "date_time": list(i.date_time),
                "crc": i.CRC,
                "compress_size": i.compress_size,
                "file_size": i.file_size,
                "create_system": i.create_system,
                "create_version": i.create_version,
                "extract_version": i.extract_version,
                "external_attr": i.external_attr,
                "internal_attr": i.internal_attr,
                "extra": i.extra.hex(),
                "comment": i.comment.hex(),
                "content": base64.b64encode(z.read(i)).decode(),
            })
    out.sort(key=lambda e: e["name"])
    return out, order


def main():
    ray_src = Path(os.environ["RAY_SRC"]).resolve()
    testdata, outdir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    os.environ["TZ"] = "UTC"
    time.tzset()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build_ray_package(ray_src, tmp / "py")
        sys.path.insert(0, str(tmp / "py"))
        from ray._private.runtime_env import packaging

        assert packaging.__file__.startswith(str(tmp / "py")), packaging.__file__
        dirs = prepare(testdata, tmp / "work")
        cases = json.loads((testdata / "cases.json").read_text())
        outdir.mkdir(parents=True, exist_ok=True)
        for case in cases:
            if case.get("ignore_gitignore"):
                os.environ["RAY_RUNTIME_ENV_IGNORE_GITIGNORE"] = "1"
            else:
                os.environ.pop("RAY_RUNTIME_ENV_IGNORE_GITIGNORE", None)
            d = str(dirs / case["dir"])
            excludes = case.get("excludes", [])
            uri = packaging.get_uri_for_directory(d, excludes=excludes)
            zip_path = tmp / f"{case['name']}.zip"
            packaging.create_package(
                d, zip_path, include_parent_dir=case.get("include_parent_dir", False), excludes=excludes
            )
            es, order = entries(zip_path)
            golden = {
                "case": case["name"],
                "uri": uri,
                "entries": es,
                "ray_order": order,
                "zip": base64.b64encode(zip_path.read_bytes()).decode(),
            }
            (outdir / f"{case['name']}.json").write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
            print(f"{case['name']}: {uri} ({len(es)} entries)")


if __name__ == "__main__":
    main()
