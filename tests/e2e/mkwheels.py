#!/usr/bin/env python3
"""Builds the fixture wheels and the PEP 503 index that stand in for PyPI in
the end-to-end test, using only the standard library.

The wheels are small but valid (METADATA, WHEEL, RECORD with sha256 hashes,
entry points) and named exactly like the real ones, so pip's platform and
Python-version matching is exercised for real:

  ray-2.46.0-cp{311,312}-cp{311,312}-manylinux2014_{x86_64,aarch64}.whl
  debugpy-1.8.14-cp{311,312}-cp{311,312}-manylinux_2_5_<arch>.manylinux1_<arch>.manylinux_2_17_<arch>.manylinux2014_<arch>.whl
  click-8.1.8-py3-none-any.whl        (a requirement of ray)
  colorful-0.5.6-py2.py3-none-any.whl (ray's [default] extra)
  aiohttp-3.9.5-py3-none-any.whl      (ray's [default] extra), which requires
    aiosignal-1.3.1-py3-none-any.whl  (transitive, universal) and
    frozenlist-1.4.1-cp{311,312}-cp{311,312}-manylinux2014_{x86_64,aarch64}.whl
                                      (transitive, one platform wheel per architecture)

Each platform wheel carries <pkg>/_fixture_arch.txt naming its architecture,
so a test can prove the arm64 image got the aarch64 wheel. Where the stand-in
base tarballs exist ($IMAGECTL_TEST_CACHE/base/base-{amd64,arm64}.tar, made by
hack/deps.d/35-base-images.sh), each cp311 ray wheel also carries a real
compiled module of its architecture (ray/_fixture/_json.cpython-311-<arch>-
linux-gnu.so, CPython's own _json extension taken from that base), so
imagectl smoke image proves the compiled modules of the right architecture
load in each platform's container.

Where Debian's python3-debugpy is installed (hack/deps.d/10-apt.sh), each
debugpy wheel carries its real code instead of a stub: debugpy 1.6.3 with the
pydevd Debian unbundles (symbolic links followed, so vendored as upstream
ships it) and pydevd's bytecode dependency, without Debian's x86-64 speedups
(pure Python runs on every architecture), and _version.py reporting the
fixture's version (1.8.14). PyPI cannot be reached here; this is the only
real debugpy, and imagectl smoke image needs a real debug adapter to attach
to inside the image. Ray stays a stub. The real ray [default] extra pulls in
~60 distributions; here it pulls in five, two of them transitive, which is
what locking (imagectl matrix refresh) and the SBOM must find.

usage: mkwheels.py [--add aiosignal==1.3.2] [--swap PROJECT] OUTDIR
    -> OUTDIR/files/*.whl, OUTDIR/simple/<project>/index.html (with #sha256=),
       OUTDIR/simple/<project>/index.json (the Simple API's JSON form, PEP 691
       with PEP 700's versions, for matrix refresh; fakeupstream serve answers
       it to Accept: application/vnd.pypi.simple.v1+json)

--add adds another release of a pure fixture project (aiosignal, click,
colorful, aiohttp): a transitive bump. --swap rebuilds PROJECT's wheels under
the same file names with different content: a wheel replaced in the index
after it was locked. Every run rebuilds the whole index (the wheels are
byte-for-byte reproducible), so a run without --swap restores the originals.

tests/bench/mkfixtures.py imports wheel() and write_index() for the
realistic-size benchmark fixtures (file contents given as Stored bytes are
stored uncompressed).
"""
import base64
import hashlib
import json
import os
import sys
import tarfile
import zipfile

FIXED = (2020, 1, 1, 0, 0, 0)


def record_hash(data):
    d = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(d).rstrip(b"=").decode()


def wheel(outdir, dist, version, tag, files, requires=(), extras=(), entry_points=None):
    pyver, abi, plat = tag
    fname = f"{dist}-{version}-{pyver}-{abi}-{plat}.whl"
    distinfo = f"{dist}-{version}.dist-info"
    meta = [
        "Metadata-Version: 2.1",
        f"Name: {dist}",
        f"Version: {version}",
        "Summary: imagectl e2e fixture standing in for the real project",
    ]
    for r in requires:
        meta.append(f"Requires-Dist: {r}")
    for name, reqs in extras:
        meta.append(f"Provides-Extra: {name}")
        for r in reqs:
            meta.append(f'Requires-Dist: {r} ; extra == "{name}"')
    content = dict(files)
    content[f"{distinfo}/METADATA"] = "\n".join(meta) + "\n\n"
    purelib = "true" if plat == "any" else "false"
    tags = [f"{p}-{abi}-{pl}" for p in pyver.split(".") for pl in plat.split(".")]
    content[f"{distinfo}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: imagectl-mkwheels\n"
        f"Root-Is-Purelib: {purelib}\n" + "".join(f"Tag: {t}\n" for t in tags)
    )
    if entry_points:
        content[f"{distinfo}/entry_points.txt"] = entry_points
    record = []
    for path in sorted(content):
        data = content[path] if isinstance(content[path], bytes) else content[path].encode()
        record.append(f"{path},{record_hash(data)},{len(data)}")
    record.append(f"{distinfo}/RECORD,,")
    content[f"{distinfo}/RECORD"] = "\n".join(record) + "\n"
    os.makedirs(os.path.join(outdir, "files"), exist_ok=True)
    path = os.path.join(outdir, "files", fname)
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(content):
            zi = zipfile.ZipInfo(p, FIXED)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            if isinstance(content[p], Stored):
                # incompressible payload: deflating it would only cost time
                zi.compress_type = zipfile.ZIP_STORED
            if p.endswith(".so"):
                zi.external_attr = 0o755 << 16
            z.writestr(zi, content[p])
    os.replace(tmp, path)
    return fname


class Stored(bytes):
    """File content wheel() stores uncompressed (incompressible payload)."""


def compiled_module(arch):
    """CPython 3.11's _json extension for arch from the stand-in base, or None."""
    cache = os.environ.get("IMAGECTL_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "imagectl-test")
    base = os.path.join(cache, "base", "base-%s.tar" % {"x86_64": "amd64", "aarch64": "arm64"}[arch])
    name = "_json.cpython-311-%s-linux-gnu.so" % arch
    if not os.path.exists(base):
        return None, None
    with tarfile.open(base) as t:
        for m in t:
            if m.name.lstrip("./") == "usr/lib/python3.11/lib-dynload/" + name and m.isfile():
                return name, t.extractfile(m).read()
    return None, None


DEBIAN_DIST = "/usr/lib/python3/dist-packages"


def tree_files(src, rel, out):
    """Adds the files under src (symbolic links followed) as rel/... to out,
    skipping caches and compiled code."""
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if name == "__pycache__" or name.endswith(".pyc") or ".so" in name:
            continue
        if os.path.isdir(p):
            tree_files(p, rel + "/" + name, out)
        elif os.path.isfile(p):
            with open(p, "rb") as f:
                out[rel + "/" + name] = f.read()


def real_debugpy(version):
    """Debian's debugpy (and bytecode) as wheel files, or None."""
    src = os.path.join(DEBIAN_DIST, "debugpy")
    if not os.path.isfile(os.path.join(src, "__init__.py")) or not os.path.isdir(os.path.join(DEBIAN_DIST, "bytecode")):
        return None
    files = {}
    tree_files(src, "debugpy", files)
    tree_files(os.path.join(DEBIAN_DIST, "bytecode"), "bytecode", files)
    files["debugpy/_version.py"] = (
        "# imagectl e2e fixture: Debian's debugpy 1.6.3 code, reporting the fixture's version.\n"
        "def get_versions():\n"
        "    return {\"version\": \"%s\", \"full-revisionid\": None, \"dirty\": False, \"error\": None, \"date\": None}\n" % version
    )
    return files


PURE = {
    # project: (version, python tag, requires)
    "click": ("8.1.8", "py3", []),
    "colorful": ("0.5.6", "py2.py3", []),
    "aiohttp": ("3.9.5", "py3", ["aiosignal>=1.1.2", "frozenlist>=1.1.1"]),
    "aiosignal": ("1.3.1", "py3", []),
}


def main(outdir, adds=(), swaps=()):
    archs = {"x86_64": "x86_64", "aarch64": "aarch64"}
    made = {}

    def extra(project):
        # A swapped wheel: same name, one more file, so another sha256.
        return {f"{project}/_swapped.txt": "replaced after locking\n"} if project in swaps else {}

    for py in ("311", "312"):
        for arch in archs:
            files = {
                "ray/__init__.py": '__version__ = "2.46.0"\n',
                "ray/_fixture_arch.txt": arch + "\n",
                "ray/scripts/__init__.py": "",
                "ray/scripts/scripts.py": "def main():\n    print('ray fixture 2.46.0')\n",
                **extra("ray"),
            }
            so_name, so = compiled_module(arch) if py == "311" else (None, None)
            if so is not None:
                files["ray/_fixture/__init__.py"] = ""
                files["ray/_fixture/" + so_name] = so
            made.setdefault("ray", []).append(wheel(
                outdir, "ray", "2.46.0", (f"cp{py}", f"cp{py}", f"manylinux2014_{arch}"),
                files,
                requires=["click>=7.0"],
                extras=[("default", ["colorful", "aiohttp>=3.7"])],
                entry_points="[console_scripts]\nray = ray.scripts.scripts:main\n",
            ))
            plat = ".".join(f"{t}_{arch}" for t in ("manylinux_2_5", "manylinux1", "manylinux_2_17", "manylinux2014"))
            dbg = real_debugpy("1.8.14") or {"debugpy/__init__.py": '__version__ = "1.8.14"\n'}
            dbg["debugpy/_fixture_arch.txt"] = arch + "\n"
            dbg.update(extra("debugpy"))
            made.setdefault("debugpy", []).append(wheel(
                outdir, "debugpy", "1.8.14", (f"cp{py}", f"cp{py}", plat), dbg,
            ))
            made.setdefault("frozenlist", []).append(wheel(
                outdir, "frozenlist", "1.4.1", (f"cp{py}", f"cp{py}", f"manylinux2014_{arch}"),
                {
                    "frozenlist/__init__.py": '__version__ = "1.4.1"\n',
                    "frozenlist/_fixture_arch.txt": arch + "\n",
                    **extra("frozenlist"),
                },
            ))
    releases = [(p, v, tag, req) for p, (v, tag, req) in PURE.items()]
    for a in adds:
        project, _, version = a.partition("==")
        if project not in PURE or not version:
            sys.exit(f"--add {a}: want PROJECT==VERSION of one of {', '.join(sorted(PURE))}")
        releases.append((project, version, PURE[project][1], PURE[project][2]))
    for project, version, tag, requires in releases:
        made.setdefault(project, []).append(wheel(
            outdir, project, version, (tag, "none", "any"),
            {f"{project}/__init__.py": f'__version__ = "{version}"\n', **extra(project)},
            requires=requires,
        ))
    write_index(outdir, made)


def write_index(outdir, made):
    """Writes the PEP 503 index of made ({project: [wheel file names]}) and
    each project page's PEP 691 JSON form."""
    simple = os.path.join(outdir, "simple")
    os.makedirs(simple, exist_ok=True)
    with open(os.path.join(simple, "index.html"), "w") as f:
        f.write("<!DOCTYPE html><html><body>\n")
        for project in sorted(made):
            f.write(f'<a href="{project}/">{project}</a>\n')
        f.write("</body></html>\n")
    for project, files in sorted(made.items()):
        d = os.path.join(simple, project)
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, "index.html.tmp")
        with open(tmp, "w") as f:
            f.write("<!DOCTYPE html><html><body>\n")
            for fn in sorted(files):
                with open(os.path.join(outdir, "files", fn), "rb") as w:
                    h = hashlib.sha256(w.read()).hexdigest()
                f.write(f'<a href="../../files/{fn}#sha256={h}">{fn}</a>\n')
            f.write("</body></html>\n")
        os.replace(tmp, os.path.join(d, "index.html"))
        # GET /simple/<project>/ in its JSON form (PEP 691, with PEP 700's
        # versions; what matrix refresh reads, and pip prefers): served by
        # fakeupstream serve when the Accept header asks for it.
        entries, versions = [], set()
        for fn in sorted(files):
            version = fn.split("-")[1]
            versions.add(version)
            with open(os.path.join(outdir, "files", fn), "rb") as w:
                data = w.read()
            entries.append({
                "filename": fn, "url": "../../files/" + fn, "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                "requires-python": None, "size": len(data), "upload-time": "2025-01-01T00:00:00.000000Z",
                "yanked": False, "core-metadata": False, "data-dist-info-metadata": False,
            })
        doc = {
            "meta": {"api-version": "1.1"}, "name": project,
            "versions": sorted(versions, key=lambda v: [int(p) for p in v.split(".")]),
            "files": entries,
        }
        tmp = os.path.join(d, "index.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        os.replace(tmp, os.path.join(d, "index.json"))

if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--add", action="append", default=[])
    ap.add_argument("--swap", action="append", default=[])
    ap.add_argument("outdir")
    a = ap.parse_args()
    main(a.outdir, a.add, a.swap)
