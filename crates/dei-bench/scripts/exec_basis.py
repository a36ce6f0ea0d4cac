#!/usr/bin/env python3
"""How often picks of each basis are right: `dei eval`'s `by_basis` (what each issue's pick rests
on, read from its candidates' behaviour and rank; `dei rank`'s `pick rests on` line), summed over
committees. Per basis: the picks (issue × committee), how many of them resolve their issue (ties
as expected value), how many the committee's best single member resolves on the same issues, and on
how many some candidate of the committee resolves the issue (Union@k).
Labels only score; nothing here ranks.

  python3 crates/dei-bench/scripts/exec_basis.py --dei target/release/dei --out OUT \\
      [--committees all14,A,acr5 | --drawn] --split tune|report|all

OUT is an exec_lite.py output folder; --drawn reads its committees.json (exec_lite.py --draw).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_half import half_points  # noqa: E402

ORDER = ["agreement", "alone", "quiet", "unhealthy", "untested"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dei", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--split", required=True, choices=["tune", "report", "all"])
    ap.add_argument("--committees", default="all14,A,acr5")
    ap.add_argument("--drawn", action="store_true", help="the committees of OUT/committees.json")
    a = ap.parse_args()
    if a.drawn:
        names = list(json.load(open(os.path.join(a.out, "committees.json")))["committees"])
    else:
        names = a.committees.split(",")
    points = half_points(a.dei, [a.out], a.split, names, bootstrap=False)
    total = {b: [0, 0.0, 0.0, 0.0] for b in ORDER}
    per = {}
    for name in names:
        rows = points[name]["exec"]["by_basis"]
        if not rows:
            sys.exit(f"{name}: dei eval gave no by_basis (a ranking without --exec, or a dei "
                     "that predates it)")
        per[name] = {r["basis"]: r for r in rows}
        for r in rows:
            t = total[r["basis"]]
            t[0] += r["issues"]
            t[1] += r["n_at_k"] * r["issues"] / 100
            t[2] += r["best_single"] * r["issues"] / 100
            t[3] += r["union"] * r["issues"] / 100
    print(f"{len(names)} committees, {a.split}: picks by basis (issue x committee)")
    print("basis\tpicks\tshare\tpick right %\tbest single right %\tUnion@k %")
    n = sum(t[0] for t in total.values())
    for b in ORDER:
        k, right, best, union = total[b]
        if k:
            print(f"{b}\t{k}\t{100 * k / n:.1f}\t{100 * right / k:.1f}\t{100 * best / k:.1f}"
                  f"\t{100 * union / k:.1f}")
    print("\nper committee: issues / pick right % per basis")
    print("committee\t" + "\t".join(ORDER))
    for name in names:
        cells = []
        for b in ORDER:
            r = per[name].get(b)
            cells.append(f'{r["issues"]}/{r["n_at_k"]:.0f}' if r else "-")
        print(name + "\t" + "\t".join(cells))


if __name__ == "__main__":
    main()
