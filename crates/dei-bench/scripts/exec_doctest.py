#!/usr/bin/env python3
"""A probe tried and not shipped: do the doctests of the modules a candidate edits tell a right
candidate from a wrong one among those `--exec` already finds healthy? For each issue of one half,
the docstring examples of every module some candidate edits (test files aside) run twice at the
base commit; those that pass both times are kept, and each distinct candidate tree runs them
once. Then, per how the candidate ran under `--exec` (healthy, not, nothing ran) and whether it
is right, how many break a kept doctest. Labels only score; nothing here ranks.

  python3 crates/dei-bench/scripts/exec_doctest.py --out OUT --committee all14 --repos REPOS \\
      --env-dir ENVS --split tune [--repo sympy/sympy] [--results FILE]

OUT is an exec_lite.py output folder (its tasks.jsonl, NAME-labelled.jsonl and NAME/exec run
directory); ENVS the environment cache `dei` built (`--env-dir`), whose `envs/` holds one folder per
(repository, version). Each run uses that environment's Python in a fresh tree written from git
objects into a temporary folder, with no network (`unshare -rn`), limits on memory, CPU time and
file size (`prlimit`), the tree's path first on PYTHONPATH, a pinned hash seed and a 300 s timeout;
writes are not confined as `dei`'s sandbox confines them. Results are appended per issue to
--results (default OUT/doctest-SPLIT.jsonl), so a rerun goes on where it stopped.
"""
import argparse
import collections
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half, journal_results, labels as read_labels  # noqa: E402
from exec_health import state  # noqa: E402

RUNNER = r'''
import doctest, importlib, json, os, signal, sys
sys.path.insert(0, os.getcwd())
out = {}
def alarm(s, f):
    raise TimeoutError()
signal.signal(signal.SIGALRM, alarm)
for path in sys.argv[1:]:
    mod = path[:-3].replace("/", ".")
    if mod.endswith(".__init__"):
        mod = mod[: -len(".__init__")]
    try:
        m = importlib.import_module(mod)
        tests = doctest.DocTestFinder().find(m)
    except BaseException as e:
        out["IMPORT " + mod] = "error:" + type(e).__name__
        continue
    for t in tests:
        if not t.examples or not t.name.startswith(mod):
            continue
        r = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        signal.alarm(20)
        try:
            out[t.name] = "fail" if r.run(t, out=lambda s: None).failed else "pass"
        except BaseException as e:
            out[t.name] = "error:" + type(e).__name__
        finally:
            signal.alarm(0)
print("DOCTESTS " + json.dumps(out))
'''


def edited_modules(patch):
    files = re.findall(r"^\+\+\+ b/(\S+)", patch or "", re.M)
    return [f for f in files if f.endswith(".py") and "/tests/" not in f
            and not os.path.basename(f).startswith("test") and "/testing/" not in f]


def env_python(env_dir, task):
    owner, name = task["repo"].split("/")
    key = f"{owner.replace('-', '_')}_{name.replace('-', '_')}_{task['version']}-"
    found = sorted(d for d in glob.glob(os.path.join(env_dir, "envs", key + "*"))
                   if os.path.isdir(d))
    return os.path.join(found[0], "venv", "bin", "python") if found else None


def run_doctests(tree, python, runner, modules):
    env = {"PATH": os.path.dirname(python) + ":/usr/bin:/bin", "PYTHONHASHSEED": "0",
           "HOME": tree, "TMPDIR": tree, "MPLBACKEND": "Agg", "PYTHONPATH": tree}
    cmd = ["timeout", "-k", "5", "300", "prlimit", "--as=4294967296", "--cpu=300",
           "--fsize=268435456", "unshare", "-rn", python, runner, *modules]
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("DOCTESTS "):
            return json.loads(line[len("DOCTESTS "):])
    return {"_error": f"exit {p.returncode}: {p.stderr[-300:]}"}


def gather(a, tasks, by_issue, results):
    done = set()
    if os.path.exists(results):
        done = {json.loads(line)["instance_id"] for line in open(results)}
    work_root = tempfile.mkdtemp(prefix="dei-doctest-")
    runner = os.path.join(work_root, "runner.py")
    with open(runner, "w") as f:
        f.write(RUNNER)
    try:
        for iid, task in sorted(tasks.items()):
            if iid in done or (a.split != "all" and half(iid) != a.split):
                continue
            if a.repo and task["repo"] != a.repo:
                continue
            python = env_python(a.env_dir, task)
            cands = by_issue.get(iid, [])
            rec = {"instance_id": iid, "modules": [], "base": [], "candidates": {}}
            base = os.path.join(work_root, "base")
            os.makedirs(base)
            git_dir = os.path.join(a.repos, task["repo"].replace("/", "__"))
            written = subprocess.run(
                f"set -o pipefail; git --git-dir={git_dir} archive {task['base_commit']} | tar -x -C {base}",
                shell=True, executable="/bin/bash", capture_output=True, text=True)
            if written.returncode != 0:
                # A fetched mirror may lack its largest blobs: the base tree cannot be written.
                rec["skipped"] = "base tree not written: " + written.stderr.strip().splitlines()[0]
            mods = sorted({m for c in cands for m in edited_modules(c["model_patch"])
                           if os.path.exists(os.path.join(base, m))})
            rec["modules"] = mods
            if mods and python and "skipped" not in rec:
                rec["base"] = [run_doctests(base, python, runner, mods) for _ in range(2)]
                seen = {}
                for c in cands:
                    patch = c["model_patch"] or ""
                    h = hashlib.sha256(patch.encode()).hexdigest()
                    if h not in seen:
                        tree = os.path.join(work_root, "c" + h[:12])
                        shutil.copytree(base, tree, symlinks=True)
                        applied = subprocess.run(
                            ["patch", "-p1", "-s", "-f", "--no-backup-if-mismatch"],
                            input=patch, cwd=tree, capture_output=True, text=True)
                        seen[h] = (run_doctests(tree, python, runner, mods)
                                   if applied.returncode == 0 else {"_error": "does not apply"})
                        shutil.rmtree(tree, ignore_errors=True)
                    rec["candidates"][c["run"]] = seen[h]
            shutil.rmtree(base, ignore_errors=True)
            with open(results, "a") as f:
                f.write(json.dumps(rec) + "\n")
            print(iid, len(mods), "modules", len(rec["candidates"]), "candidates", flush=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)


def report(a, results):
    issues = journal_results(os.path.join(a.out, a.committee, "exec"))
    labels = read_labels(os.path.join(a.out, f"{a.committee}-labelled.jsonl"))
    table = collections.Counter()
    kept_issues = kept = read = 0
    skipped = []
    for line in open(results):
        r = json.loads(line)
        read += 1
        if "skipped" in r:
            skipped.append(r["instance_id"])
        b0, b1 = (r["base"] + [{}, {}])[:2]
        stable = {k for k, v in b0.items() if v == "pass" and b1.get(k) == "pass"}
        kept_issues += bool(stable)
        kept += len(stable)
        ranked = (issues.get(r["instance_id"]) or {}).get("ranked") or []
        by_agent = {c["agent"]: c for c in ranked}
        for agent, got in r["candidates"].items():
            if not stable or agent not in by_agent:
                continue
            st = state(by_agent[agent], ranked)
            st = st if st in ("healthy", "none") else "not healthy"
            if "_error" in got:
                outcome = "could not run"
            else:
                outcome = "breaks one" if any(got.get(k) != "pass" for k in stable) else "breaks none"
            right = labels.get((r["instance_id"], agent), False)
            table[(st, outcome, right)] += 1
    print(f"{kept_issues} of {read} issues with doctests that pass twice at base ({kept} docstrings);"
          f" {len(skipped)} skipped: {', '.join(skipped) or 'none'}")
    print("candidate ran | doctests | right | wrong")
    for st in ("healthy", "not healthy", "none"):
        for outcome in ("breaks one", "breaks none", "could not run"):
            r, w = table[(st, outcome, True)], table[(st, outcome, False)]
            if r or w:
                print(f"{st:12} | {outcome:13} | {r:5} | {w:5}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--committee", default="all14")
    ap.add_argument("--repos", required=True)
    ap.add_argument("--env-dir", required=True)
    ap.add_argument("--split", required=True, choices=["tune", "report", "all"])
    ap.add_argument("--repo", default=None)
    ap.add_argument("--results", default=None)
    a = ap.parse_args()
    tasks = {}
    for line in open(os.path.join(a.out, "tasks.jsonl")):
        t = json.loads(line)
        tasks[t["instance_id"]] = t
    by_issue = collections.defaultdict(list)
    for line in open(os.path.join(a.out, f"{a.committee}-labelled.jsonl")):
        c = json.loads(line)
        by_issue[c["instance_id"]].append(c)
    results = a.results or os.path.join(a.out, f"doctest-{a.split}.jsonl")
    gather(a, tasks, by_issue, results)
    report(a, results)


if __name__ == "__main__":
    main()
