#!/usr/bin/env python3
"""Compare variants of the committee's rules over many committees: each OUT is an exec_lite.py
output folder (the same committees, ranked under one variant each, e.g. with --draw and
--offline-weights); prints, per committee, 1@k with --exec under each variant beside the plain
ranking, the best single member and Union@k, then the mean over the committees, how many
committees each variant wins and loses against the first, and its mean minus the best member.

  python3 crates/dei-bench/scripts/exec_committees.py V0=OUT0 V1=OUT1 V2=OUT2 [--committees r1,r2]

Reads each folder's `dei eval` results (NAME-exec-eval.json, NAME-plain-eval.json); ranks nothing.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import last_point  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="+", help="NAME=OUT, the first is the reference")
    ap.add_argument("--committees", default=None,
                    help="comma-separated (default: the first folder's committees.json)")
    a = ap.parse_args()
    variants = [v.split("=", 1) for v in a.variants]
    first = variants[0][1]
    if a.committees:
        names = a.committees.split(",")
    else:
        names = list(json.load(open(os.path.join(first, "committees.json")))["committees"])
    head = ["committee", "k", "plain"] + [n for n, _ in variants] + ["best single", "union"]
    print("\t".join(head))
    rows = []
    for c in names:
        plain = last_point(os.path.join(first, f"{c}-plain-eval.json"))
        ex = [last_point(os.path.join(out, f"{c}-exec-eval.json"))["n_at_k"] for _, out in variants]
        rows.append((plain, ex))
        print("\t".join([c, str(plain["k"]), f'{plain["n_at_k"]:.1f}'] + [f"{e:.1f}" for e in ex]
                        + [f'{plain["best_single_rate"]:.1f}', f'{plain["union"]:.1f}']))
    n = len(rows)
    mean = lambda xs: sum(xs) / n  # noqa: E731
    print("\t".join(["mean", "", f'{mean([p["n_at_k"] for p, _ in rows]):.2f}']
                    + [f"{mean([e[i] for _, e in rows]):.2f}" for i in range(len(variants))]
                    + [f'{mean([p["best_single_rate"] for p, _ in rows]):.2f}',
                       f'{mean([p["union"] for p, _ in rows]):.2f}']))
    for i, (name, _) in enumerate(variants):
        won = sum(1 for _, e in rows if e[i] > e[0] + 1e-9)
        lost = sum(1 for _, e in rows if e[i] < e[0] - 1e-9)
        above = sum(1 for p, e in rows if e[i] > p["best_single_rate"] + 1e-9)
        below = sum(1 for p, e in rows if e[i] < p["best_single_rate"] - 1e-9)
        gap = mean([e[i] - p["best_single_rate"] for p, e in rows])
        print(f"{name}: against {variants[0][0]} wins {won}, loses {lost}; against the best member "
              f"above on {above}, below on {below} of {n}, mean {gap:+.2f} points")


if __name__ == "__main__":
    main()
