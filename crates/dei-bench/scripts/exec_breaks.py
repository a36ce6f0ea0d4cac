#!/usr/bin/env python3
"""How often a candidate that breaks a test is resolved, by how widely the committee shares the
break: over the `--exec` rankings offline_committees.py wrote, each candidate whose tests ran is
counted by its least shared break held against it (rewritten tests aside), as the share of agent
families whose tests ran that break the test (a family counting as the share of its runs that
do): none broken, under half, half or more but not all, all. Issues with fewer than three
families whose tests ran are left out. Per generation: committees of 2024 runs only, and those
holding a newer run. Labels only score; nothing here ranks.

  python3 crates/dei-bench/scripts/exec_breaks.py --data ../shared/data --out OUT [--out OUT2] \\
      --build NAME+exec [--split tune|report|all]

OUT is an offline_committees.py --out folder (with --exec); every committee under OUT/NAME+exec is read.
"""
import argparse
import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from offline_committees import half, last_lines, pair_labels  # noqa: E402

BUCKETS = ("none", "under half", "half or more", "all")


def family(agent):
    """`dei::candidates::family_of`: a leading 8-digit date token dropped, the first `_` token,
    a trailing run number (`-3`, `-run-12`) removed."""
    tokens = [t for t in agent.split("_") if t]
    if len(tokens) > 1 and re.fullmatch(r"\d{8}", tokens[0]):
        tokens.pop(0)
    fam = tokens[0] if tokens else agent
    while True:
        m = re.fullmatch(r"(.+?)(?:-run)?[-.]\d{1,2}", fam)
        if not m:
            return fam or agent
        fam = m.group(1)


def shares(families):
    """Each test some candidate breaks: the share of families breaking it, a family counting as
    the share of its runs that do."""
    tests = {t for cs in families.values() for c in cs for t in c["behaviour"].get("broken", [])}
    return {t: sum(sum(t in c["behaviour"].get("broken", []) for c in cs) / len(cs)
                   for cs in families.values()) / len(families)
            for t in tests}


def bucket(candidate, share):
    b = candidate["behaviour"]
    held = [t for t in b.get("broken", []) if t not in b.get("rewritten", [])]
    if not held:
        return "none"
    least = min(share[t] for t in held)
    return "all" if least >= 1 - 1e-9 else "half or more" if least >= 0.5 else "under half"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True, action="append")
    ap.add_argument("--build", required=True, help="the ranking folder under OUT, e.g. head+exec")
    ap.add_argument("--split", default="tune", choices=("tune", "report", "all"))
    a = ap.parse_args()
    labels, old = pair_labels(a.data)
    counts = collections.defaultdict(lambda: [0, 0])
    journals = sorted(j for out in a.out for j in glob.glob(os.path.join(out, a.build, "*", "journal.jsonl")))
    if not journals:
        sys.exit(f"no journal under {a.build} in {', '.join(a.out)}: run offline_committees.py --exec first")
    for journal in journals:
        for iid, outcome in last_lines(journal).items():
            if a.split != "all" and half(iid) != a.split:
                continue
            ran = [c for c in (outcome.get("result") or {}).get("ranked", [])
                   if (c.get("behaviour") or {}).get("tests_run", 0) > 0]
            families = collections.defaultdict(list)
            for c in ran:
                families[family(c["agent"])].append(c)
            if len(families) < 3:
                continue
            gen = "2024" if all(c["agent"] in old for c in ran) else "with newer runs"
            share = shares(families)
            for c in ran:
                n = counts[(gen, bucket(c, share))]
                n[0] += labels.get((iid, c["agent"]), False)
                n[1] += 1
    print(f"{a.build}, {a.split} half: candidates resolved / candidates, by the share of agent families "
          "breaking their least shared break")
    for gen in ("2024", "with newer runs"):
        cells = []
        for b in BUCKETS:
            r, n = counts[(gen, b)]
            cells.append(f"{b} {r}/{n}" + (f" ({100 * r / n:.1f}%)" if n else ""))
        print(f"  {gen}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
