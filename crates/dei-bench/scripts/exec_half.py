#!/usr/bin/env python3
"""Score one half of the shared split from an exec_lite.py output folder, without ranking again:
the labelled candidates and task records of OUT are cut to the half's instances and each
committee's plain and --exec journals are given to `dei eval` (ties as expected value).

  python3 crates/dei-bench/scripts/exec_half.py --dei target/release/dei --out OUT --split report
  python3 crates/dei-bench/scripts/exec_half.py --dei target/release/dei --out OUT --split all --repo sympy/sympy
  python3 crates/dei-bench/scripts/exec_half.py --dei target/release/dei --out OUT1 OUT2 --split report

Several output folders (runs of other repositories, with --skip-settled) are scored as one set
of instances: their task records, labelled candidates and scores are joined.

Prints, per committee: instances, k, 1@k plain and with --exec, Average@k, best single member,
Union@k, and 1@k with --exec minus the best single member, paired per instance, with its 95%
bootstrap interval; where every folder also holds the committee's exec-llm ranking
(exec_lite.py --exec-llm-repro), its 1@k and difference from the best member too (`dei eval`'s, 1000 resamples over the half's instances, seed 42). Rankings are per issue, so this equals running exec_lite.py with --split on that half.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half, last_point, summary  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dei", required=True)
    ap.add_argument("--out", required=True, nargs="+", help="exec_lite.py output folders")
    ap.add_argument("--split", required=True, choices=["tune", "report", "all"])
    ap.add_argument("--repo", default=None, help="only this repository's instances (owner/name)")
    ap.add_argument("--committees", default="all14,A,acr5")
    a = ap.parse_args()
    rows = {}
    for name, row in half_points(a.dei, a.out, a.split, a.committees.split(","), a.repo).items():
        p = row["plain"]
        rows[name] = summary(p, {f"1@k {m}": row[m]["n_at_k"] for m in row})
        for mode in (m for m in row if m != "plain"):
            mb = row[mode].get("minus_best")
            if mb and mb.get("ci"):
                lo, hi = mb["ci"]
                rows[name][f"1@k {mode} - best single [95% CI, paired]"] = (
                    f'{mb["value"]:+.1f} [{lo:+.1f}, {hi:+.1f}]')
    print(json.dumps(rows, indent=1))


def half_points(dei, outs, split, committees, repo=None, bootstrap=True):
    """Per committee, the last `dei eval` point of its plain and --exec rankings over one half of
    the split (or all), from exec_lite.py output folders OUTS joined: {name: {"plain", "exec"}},
    and "exec-llm" where every folder holds that ranking too."""
    tmp = tempfile.mkdtemp(prefix="exec-half-")
    tasks = [json.loads(l) for out in outs for l in open(os.path.join(out, "tasks.jsonl"))]
    keep = {t["instance_id"] for t in tasks
            if split in ("all", half(t["instance_id"])) and repo in (None, t["repo"])}
    tasks_file = os.path.join(tmp, "tasks.jsonl")
    with open(tasks_file, "w") as f:
        for t in tasks:
            if t["instance_id"] in keep:
                f.write(json.dumps(t) + "\n")
    points = {}
    for name in committees:
        labelled = os.path.join(tmp, f"{name}-labelled.jsonl")
        with open(labelled, "w") as f:
            for out in outs:
                for line in open(os.path.join(out, f"{name}-labelled.jsonl")):
                    if json.loads(line)["instance_id"] in keep:
                        f.write(line)
        row = {}
        llm = all(os.path.exists(os.path.join(out, name, "exec-llm", "journal.jsonl")) for out in outs)
        for mode in ("plain", "exec") + (("exec-llm",) if llm else ()):
            ev = os.path.join(tmp, f"{name}-{mode}.json")
            # exec_lite.py --skip-settled merges the exec journal with the plain ranking of
            # settled issues into one scores file
            found = []
            for out in outs:
                merged = os.path.join(out, f"{name}-{mode}-scores.jsonl")
                found.append(merged if os.path.exists(merged)
                             else os.path.join(out, name, mode, "journal.jsonl"))
            if len(found) == 1:
                scores = found[0]
            else:
                scores = os.path.join(tmp, f"{name}-{mode}-scores.jsonl")
                with open(scores, "w") as f:
                    for m in found:
                        f.write(open(m).read())
            draws = "1000" if bootstrap and mode != "plain" else "0"
            subprocess.run([dei, "eval", labelled, "--tasks", tasks_file, "--scores", scores,
                            "--bootstrap", draws, "--coverage", "all", "--json", ev],
                           check=True, stdout=subprocess.DEVNULL)
            row[mode] = last_point(ev)
        points[name] = row
    return points


if __name__ == "__main__":
    main()
