"""imagectl smoke image: what the shipped interpreter sees, as JSON.

Run by the image's own python3 (found on the image's PATH, with the image's
environment) as: check.py SITE_PACKAGES
Prints one line "IMAGECTL-SMOKE-RESULT <json>" on stdout; imagectl judges it.
Only the standard library is used before ray and debugpy are imported.
"""
import ctypes
import importlib
import json
import os
import platform
import struct
import sys
import traceback

MARK = "IMAGECTL-SMOKE-RESULT "


def module_info(name):
    info = {"name": name}
    try:
        mod = importlib.import_module(name)
        info["version"] = str(getattr(mod, "__version__", ""))
        info["file"] = os.path.realpath(getattr(mod, "__file__", "") or "")
    except BaseException as e:  # noqa: BLE001 - everything is reported
        info["error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
    try:
        from importlib import metadata

        info["dist_version"] = metadata.version(name)
    except BaseException as e:  # noqa: BLE001
        info["dist_error"] = "".join(traceback.format_exception_only(type(e), e)).strip()
    return info


def elf_machine(path):
    """e_machine of an ELF file, or None when it is not ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order = "<" if head[5] == 1 else ">"
    return struct.unpack(order + "H", head[18:20])[0]


def record_owners(site):
    """Maps each file path under site to the distribution whose RECORD lists it."""
    owners, dists = {}, []
    for entry in sorted(os.listdir(site)):
        if not entry.endswith(".dist-info"):
            continue
        meta = {}
        try:
            with open(os.path.join(site, entry, "METADATA"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    k, _, v = line.partition(":")
                    meta.setdefault(k.strip().lower(), v.strip())
        except OSError:
            pass
        name = meta.get("name", entry[: -len(".dist-info")])
        dists.append({"name": name, "version": meta.get("version", "")})
        try:
            with open(os.path.join(site, entry, "RECORD"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    p = line.rsplit(",", 2)[0].strip().strip('"')
                    if p:
                        owners[os.path.normpath(os.path.join(site, p))] = name
        except OSError:
            pass
    return owners, dists


def compiled(site):
    """Every ELF file under site: its machine, and for shared objects whether
    the dynamic loader loads it (dlopen with every symbol bound now)."""
    owners, dists = record_owners(site)
    out = []
    mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_LOCAL", 0)
    for dirpath, dirnames, filenames in os.walk(site):
        dirnames.sort()
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            m = elf_machine(p)
            if m is None:
                continue
            item = {"path": p, "machine": m, "dist": owners.get(os.path.normpath(p), "")}
            base = fn.split(".so")[0] if ".so" in fn else None
            if base is not None and (fn.endswith(".so") or ".so." in fn):
                item["shared"] = True
                try:
                    ctypes.CDLL(p, mode=mode)
                except OSError as e:
                    item["error"] = str(e)
            out.append(item)
    return out, dists


def main():
    site = sys.argv[1]
    res = {
        "executable": sys.executable,
        "realpath": os.path.realpath(sys.executable),
        "version": "%d.%d.%d" % sys.version_info[:3],
        "machine": platform.machine(),
        "path_env": os.environ.get("PATH", ""),
        "pythonpath_env": os.environ.get("PYTHONPATH", ""),
        "sys_path": sys.path,
        "site_exists": os.path.isdir(site),
    }
    res["imports"] = [module_info("debugpy"), module_info("ray")]
    if res["site_exists"]:
        res["compiled"], res["dists"] = compiled(site)
    sys.stdout.flush()
    print(MARK + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
