#!/usr/bin/env python3
"""Realistic-size fixtures for the rebuild benchmark (tests/bench/run.sh),
generated deterministically from a seeded PRNG (the same bytes on every run
and machine), using only the standard library:

  OUTDIR/pyindex  a PEP 503 index (tests/e2e/mkwheels.py's wheel format):
                  ray 2.46.0 (cp311, cp312 x x86_64, aarch64) of 60 MiB each,
                  requiring 30 dependency wheels (py3-none-any) that total
                  100 MiB, plus the small debugpy, click and colorful wheels;
  OUTDIR/vsix     the VSIX fixtures of extensions/testdata/vsix with
                  incompressible payload files added under extension/payload/,
                  so that ms-python.python builds are 26 MB, ms-python.debugpy
                  and anyscalecompute.ray-distributed-debugger builds 16 MB
                  (MB = 10^6 bytes, the sizes of the real files).

Payload bytes are incompressible (PRNG output) and split into files of at
most 1 MiB, as real packages are many files. Every wheel and every VSIX
build gets its own bytes (seeded by its name), except that the cp311 and
cp312 wheels of one architecture share them (only one is ever installed).

usage: mkfixtures.py OUTDIR
"""
import hashlib
import os
import random
import sys
import zipfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "e2e"))
import mkwheels  # noqa: E402

MIB = 1 << 20
MB = 1000 * 1000
SEED = "imagectl-bench-v1"
RAY_BYTES = 60 * MIB
DEPS = 30
DEPS_BYTES = 100 * MIB
CHUNK = 1 * MIB
VSIX_BYTES = {
    "ms-python.python": 26 * MB,
    "ms-python.debugpy": 16 * MB,
    "anyscalecompute.ray-distributed-debugger": 16 * MB,
}


def payload(name, size):
    """size incompressible bytes determined by name."""
    return random.Random(f"{SEED}/{name}").randbytes(size)


def chunks(prefix, data):
    """data as files of at most CHUNK bytes under prefix/."""
    return {f"{prefix}/{i:03d}.bin": mkwheels.Stored(data[off:off + CHUNK]) for i, off in enumerate(range(0, len(data), CHUNK))}


def dep_sizes():
    """30 sizes that add up to DEPS_BYTES, uneven like real dependencies."""
    r = random.Random(f"{SEED}/dep-sizes")
    weights = [r.uniform(0.2, 3.0) for _ in range(DEPS)]
    total = sum(weights)
    sizes = [int(DEPS_BYTES * w / total) for w in weights]
    sizes[-1] += DEPS_BYTES - sum(sizes)
    return sizes


def wheels(outdir):
    made = {}
    deps = []
    for i, size in enumerate(dep_sizes(), 1):
        dist = f"benchdep{i:02d}"
        deps.append(dist)
        made[dist] = [mkwheels.wheel(outdir, dist, "1.0.0", ("py3", "none", "any"), {
            f"{dist}/__init__.py": '__version__ = "1.0.0"\n',
            **chunks(f"{dist}/_data", payload(dist, size)),
        })]
    for arch in ("x86_64", "aarch64"):
        data = chunks("ray/_bench", payload(f"ray-{arch}", RAY_BYTES))
        for py in ("311", "312"):
            made.setdefault("ray", []).append(mkwheels.wheel(
                outdir, "ray", "2.46.0", (f"cp{py}", f"cp{py}", f"manylinux2014_{arch}"),
                {
                    "ray/__init__.py": '__version__ = "2.46.0"\n',
                    "ray/_fixture_arch.txt": arch + "\n",
                    "ray/scripts/__init__.py": "",
                    "ray/scripts/scripts.py": "def main():\n    print('ray fixture 2.46.0')\n",
                    **data,
                },
                requires=["click>=7.0"] + [f"{d}==1.0.0" for d in deps],
                extras=[("default", ["colorful"])],
                entry_points="[console_scripts]\nray = ray.scripts.scripts:main\n",
            ))
            plat = ".".join(f"{t}_{arch}" for t in ("manylinux_2_5", "manylinux1", "manylinux_2_17", "manylinux2014"))
            made.setdefault("debugpy", []).append(mkwheels.wheel(
                outdir, "debugpy", "1.8.14", (f"cp{py}", f"cp{py}", plat),
                {"debugpy/__init__.py": '__version__ = "1.8.14"\n', "debugpy/_fixture_arch.txt": arch + "\n"},
            ))
    made["click"] = [mkwheels.wheel(outdir, "click", "8.1.8", ("py3", "none", "any"), {"click/__init__.py": '__version__ = "8.1.8"\n'})]
    made["colorful"] = [mkwheels.wheel(outdir, "colorful", "0.5.6", ("py2.py3", "none", "any"), {"colorful/__init__.py": '__version__ = "0.5.6"\n'})]
    mkwheels.write_index(outdir, made)


def vsix(src_dir, outdir):
    os.makedirs(outdir, exist_ok=True)
    for fn in sorted(os.listdir(src_dir)):
        if not fn.endswith(".vsix"):
            continue
        src = os.path.join(src_dir, fn)
        ext_id = fn.split("@")[0].rsplit("-", 1)[0]
        dst = os.path.join(outdir, fn)
        target = VSIX_BYTES.get(ext_id)
        with zipfile.ZipFile(src) as zin:
            entries = [(zi, zin.read(zi)) for zi in zin.infolist()]
        tmp = dst + ".tmp"
        with zipfile.ZipFile(tmp, "w") as z:
            for zi, data in entries:
                z.writestr(zi, data)
            if target:
                have = os.path.getsize(src)
                # about 150 bytes of zip headers per added file
                need = target - have - 150 * (target // CHUNK + 1)
                for name, data in sorted(chunks("extension/payload", payload(fn, need)).items()):
                    zi = zipfile.ZipInfo(name, mkwheels.FIXED)
                    zi.external_attr = 0o644 << 16
                    zi.compress_type = zipfile.ZIP_STORED
                    z.writestr(zi, data)
        os.replace(tmp, dst)


def main(outdir):
    wheels(os.path.join(outdir, "pyindex"))
    vsix(os.path.join(here, "..", "..", "extensions", "testdata", "vsix"), os.path.join(outdir, "vsix"))
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(outdir)):
        for f in sorted(files):
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                h.update(os.path.relpath(p, outdir).encode() + b"\0" + hashlib.sha256(fh.read()).digest())
    print(f"fixtures {outdir}: sha256 {h.hexdigest()}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
