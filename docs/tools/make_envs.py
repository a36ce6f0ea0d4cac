#!/usr/bin/env python3
"""Make src/exec/envs.json from the SWE-bench Lite environment facts.

Usage: python3 docs/tools/make_envs.py ../shared/data/swebench_envs > src/exec/envs.json

Reads specs.json (the harness facts per (repository, version)) and verify.json (one real build
per pair with the local fixes it needed) and writes one dei environment spec per pair:
requirements = conda packages (as pip names) + the resolved requirement files + the harness pip
pins (a pin wins over an unpinned name), the verified resolver cutoff, pre-install lines, the
install command, the test command (with verify.json's test_cmd override), PYTHONPATH entries
and the untracked files the build generates that a tree written from git objects lacks.
"""
import json
import re
import sys
from pathlib import Path

# Per repository: import roots inside the tree, and generated files (exact paths, or "*.ext":
# every untracked file with that extension outside build/) to copy into each sandbox tree.
LAYOUT = {
    "sympy/sympy": {"pythonpath": ["."], "generated": []},
    "psf/requests": {"pythonpath": ["."], "generated": []},
    "pallets/flask": {"pythonpath": ["src"], "generated": []},
    "pytest-dev/pytest": {"pythonpath": ["src"], "generated": ["src/_pytest/_version.py"]},
    "pylint-dev/pylint": {"pythonpath": ["."], "generated": []},
    "sphinx-doc/sphinx": {"pythonpath": ["."], "generated": []},
    "pydata/xarray": {"pythonpath": ["."], "generated": []},
    "mwaskom/seaborn": {"pythonpath": ["."], "generated": []},
    "astropy/astropy": {
        "pythonpath": ["."],
        "generated": ["*.so", "astropy/version.py", "astropy/_version.py",
                      "astropy/cython_version.py", "astropy/_compiler.c"],
    },
}

# (repository, version) pairs whose Lite base commits lack a blob in the mirrors (NOTES item 5:
# astropy-14365 at 5.1, astropy-14995 at 5.2): the file is fetched from a wheel at build time
# and carried into every sandbox tree, whose other files come from git.
MISSING_BLOB = {("astropy/astropy", "5.1"), ("astropy/astropy", "5.2")}

# requests' tests call httpbin (NOTES item 6): offline, a third of them fail at every commit
# and say nothing about a candidate. A local httpbin serves them inside the sandbox's own
# network namespace (its loopback up, nothing beyond it reachable): up to 2.7 the tests read
# its address from HTTPBIN_URL, so a server starts beside each test command; from 2.8 on they
# take pytest-httpbin's `httpbin` fixture, which serves from within the test process. Pinned,
# so that every build installs the same server.
HTTPBIN = ["httpbin==0.10.4", "flask==3.1.3", "werkzeug==3.1.9"]
HTTPBIN_PORT = 8765


def local_httpbin(repo, version):
    """(requirements, env, spec fields) for requests' tests, or None."""
    if repo != "psf/requests":
        return None
    if version in ("2.10",):
        return HTTPBIN + ["pytest-httpbin==2.1.0"], {}, {"loopback": True}
    return (HTTPBIN, {"HTTPBIN_URL": f"http://127.0.0.1:{HTTPBIN_PORT}/"},
            {"service": {"start": f"python -m httpbin.core --host 127.0.0.1 --port {HTTPBIN_PORT}",
                         "port": HTTPBIN_PORT}})


# xarray's harness environment is conda-forge's, from its unpinned environment.yml: the test
# backends (bottleneck, cftime, netCDF4, h5netcdf, zarr, pint, hypothesis, ...) are there, so
# their tests run in the harness and skip without them (NOTES item 10). Those pip can install,
# at versions of the harness pins' time (mid-2023: pytest 7.4.0, scipy 1.11.1) with wheels for
# Python 3.10 and numpy 1.23, installed with the pins in one resolve. Left out: what has no
# wheel then (distributed's tornado<6.2, cartopy, hence iris), what needs a C library (cfgrib),
# what conda alone ships (cdms2), and what costs the test files dei runs whole more time than
# its gate allows for tests of code no Lite issue here edits: numba's JIT (sparse, numbagg; one
# sparse test of test_dataset.py took 11.6 s) and the plotting stack (matplotlib, seaborn,
# nc-time-axis), rasterio and pooch. At pydata__xarray-4248's base, test_dataset.py: 870
# passed in 20.5 s with these, 873 in 33 s with those too, 775 and 4 failed in 24.5 s without.
XARRAY_BACKENDS = [
    "bottleneck==1.3.7", "cftime==1.6.2", "netCDF4==1.6.4", "h5py==3.9.0", "h5netcdf==1.2.0",
    "numexpr==2.8.4", "hypothesis==6.80.0", "pint==0.22", "zarr==2.15.0", "toolz==0.12.0",
]


def name_of(req):
    return re.split(r"[=<>~!;\[ ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def requirements(pair, extra=()):
    """The pair's requirements by name (a pin wins over an unpinned name), then `extra`'s
    names the pair lacks."""
    out = {}
    for word in (pair.get("conda_packages") or "").split():
        out.setdefault(name_of(word), word)
    for line in pair.get("requirements_resolved") or []:
        if pair.get("requirements_file") == "requirements.txt":
            out[name_of(line)] = line
    for pin in pair.get("pip") or []:
        out[name_of(pin)] = pin
    for req in extra:
        out.setdefault(name_of(req), req)
    return list(out.values())


def translate(line):
    """verify.json's fixes used a scratch folder $WORK; the build's is $TMPDIR."""
    return line.replace("$WORK", "$TMPDIR")


def main():
    src = Path(sys.argv[1])
    specs = json.loads((src / "specs.json").read_text())
    verify = json.loads((src / "verify.json").read_text())
    out = []
    for repo, pairs in specs.items():
        if repo == "_meta":
            continue
        for version, p in pairs.items():
            v = verify.get(repo, {}).get(version, {})
            o = v.get("overrides") or {}
            pre = list(p.get("pre_install") or [])
            notes = list(p.get("local_fixes_verified") or [])
            if "before_install" in o:
                pre += [translate(x) for x in o["before_install"]]
            if "eopc04.1962-now" in " ".join(pre) or (repo, version) in MISSING_BLOB:
                # The hand-copied file: fetch it from the astropy 5.3 wheel instead.
                pre = [x for x in pre if "eopc04" not in x]
                pre.append(
                    "test -s astropy/utils/iers/data/eopc04.1962-now || "
                    "(python -m pip download -q --no-deps --only-binary :all: astropy==5.3 -d \"$TMPDIR/apw\" && "
                    "python -c \"import glob,zipfile; n='astropy/utils/iers/data/eopc04.1962-now'; "
                    "open(n,'wb').write(zipfile.ZipFile(glob.glob('$TMPDIR/apw/*.whl')[0]).read(n))\")"
                )
                notes.append("dei: the eopc04 file is fetched from the astropy 5.3 wheel and carried into "
                             "every sandbox tree as a generated file")
            test_cmd = o.get("test_cmd") or p["test_cmd"]
            if any("drop '-p no:nose'" in n for n in notes):
                test_cmd = test_cmd.replace(" -p no:nose", "")
            # The pre-install's edits reach the build's work tree only; every sandbox tree is
            # written from git objects. Where the harness adds -rA to tox.ini's pytest (sphinx
            # 3.1-3.3 still run through tox), give it as tox's posargs, or no test line is read.
            if test_cmd.startswith("tox ") and test_cmd.endswith(" --") and any(
                    "s/pytest/pytest -rA/" in x for x in pre):
                test_cmd += " -rA"
                notes.append("dei: -rA as tox posargs (the harness's sed of tox.ini never reaches "
                             "a sandbox tree)")
            # sympy's runner with -C turns sympy's cache off, as the harness runs its few named
            # tests. dei runs whole test files, twice at base and once per candidate, to see
            # which passing tests a candidate breaks: with the cache, as sympy runs for its
            # users, they run several times faster (test_simplify.py at sympy 1.4: 157 s of CPU
            # time without it, 12 s with it) and fewer files pass the time limit.
            if repo == "sympy/sympy" and " -C " in test_cmd:
                test_cmd = test_cmd.replace(" -C ", " ")
                notes.append("dei: sympy's cache on (the harness's -C dropped): the tests dei runs "
                             "whole take several times less time")
            lay = LAYOUT.get(repo, {"pythonpath": ["."], "generated": []})
            env = {"SETUPTOOLS_SCM_PRETEND_VERSION": version + ".0"} if repo == "pytest-dev/pytest" else {}
            backends = XARRAY_BACKENDS if repo == "pydata/xarray" else []
            reqs = requirements(p, backends)
            if backends:
                notes.append("dei: the environment.yml backends pip can install, pinned as of the "
                             "harness pins (mid-2023); numba's, the plotting stack, cdms2, iris, cartopy, "
                             "cfgrib, distributed, rasterio, pooch left out")
            served = local_httpbin(repo, version)
            fields = {}
            if served:
                more, more_env, fields = served
                reqs += more
                env.update(more_env)
                notes = [n for n in notes if "need internet" not in n]
                notes.append("dei: a local httpbin serves the tests in the sandbox (loopback only)")
            spec = {
                "repo": repo,
                "version": version,
                "python": p["python"],
                "requirements": reqs,
                "cutoff": o.get("cutoff"),
                "exempt_pins": bool(o.get("cutoff")),
                "pre_install": pre,
                "install": p.get("install"),
                "test_cmd": test_cmd,
                # A mirror or bundle without tags gives setuptools_scm "0.1.devN", which
                # pytest's own tox.ini minversion refuses: pretend the release's version.
                "env": env,
                "pythonpath": lay["pythonpath"],
                "generated": lay["generated"] + (
                    ["astropy/utils/iers/data/eopc04.1962-now"]
                    if any("eopc04" in x for x in pre) else []) + (
                    # astropy 1.3's build writes the ERFA wrapper from core.py.templ; without
                    # it `import astropy.units` fails in every sandbox tree.
                    ["astropy/_erfa/core.py"]
                    if (repo, version) == ("astropy/astropy", "1.3") else []),
                "setup_commit": p.get("environment_setup_commit"),
                "verified_build_seconds": v.get("build_seconds"),
                "notes": notes + ([p["notes"]] if p.get("notes") else []),
            }
            spec.update(fields)
            out.append(spec)
    json.dump({"source": "SWE-bench harness facts (specs.json) + verified local fixes (verify.json), "
                         "made by docs/tools/make_envs.py",
               "specs": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
