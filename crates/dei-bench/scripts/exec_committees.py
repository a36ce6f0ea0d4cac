#!/usr/bin/env python3
"""Compare variants of the committee's rules over many committees. Each OUT is an exec_lite.py
output folder holding the same committees, ranked under one variant each (e.g. with --draw and
--offline-weights). Prints, per committee, 1@k with --exec under each variant beside the plain
ranking, the best single member and Union@k; then the mean over the committees, how many
committees each variant wins and loses against the first, how many it puts above and below
their best member, and the share of the gap between the mean best member and the mean Union@k it
closes.

  python3 crates/dei-bench/scripts/exec_committees.py V0=OUT0 V1=OUT1 [--committees r1,r2] \\
      [--dei target/release/dei --split tune|report|all]
  python3 crates/dei-bench/scripts/exec_committees.py EXEC=OUT LLM=OUT:exec-llm --split report ...

A variant OUT:exec-llm reads the folder's exec-llm rankings (exec_lite.py --exec-llm-repro) in place
of its --exec ones, so one folder gives both sides of the model-written test's comparison.

Without --split each folder's own `dei eval` results are read (NAME-exec-eval.json, over the
instances it ranked); with it, the rankings are scored over that half of the shared split
(exec_half.py's way: `dei eval` on the half's labelled candidates). Ranks nothing.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_half import half_points  # noqa: E402
from exec_lite import last_point  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="+", help="NAME=OUT, the first is the reference")
    ap.add_argument("--committees", default=None,
                    help="comma-separated (default: the first folder's committees.json)")
    ap.add_argument("--dei", default=None, help="dei, to score a half with --split")
    ap.add_argument("--split", default=None, choices=["tune", "report", "all"])
    a = ap.parse_args()
    variants = [v.split("=", 1) for v in a.variants]
    if any(len(v) != 2 for v in variants):
        ap.error("each variant is NAME=OUT or NAME=OUT:exec-llm")
    # NAME=OUT:exec-llm: that folder's exec-llm rankings stand in for its --exec ones
    modes = []
    for v in variants:
        out, _, mode = v[1].rpartition(":")
        if mode in ("exec", "exec-llm") and out:
            v[1] = out
            modes.append(mode)
        else:
            modes.append("exec")
    if a.split and not a.dei:
        ap.error("--split needs --dei")
    first = variants[0][1]
    if a.committees:
        names = a.committees.split(",")
    else:
        names = list(json.load(open(os.path.join(first, "committees.json")))["committees"])

    def points(out, mode):
        if a.split:
            got = half_points(a.dei, [out], a.split, names, bootstrap=False)
        else:
            got = {c: {m: last_point(os.path.join(out, f"{c}-{m}-eval.json"))
                       for m in ("plain", mode)} for c in names}
        missing = [c for c in names if mode not in got[c]]
        if missing:
            sys.exit(f"{out}: no {mode} ranking for {', '.join(missing)} (exec_lite.py --exec-llm-repro makes one)")
        # the variant's rankings, under the name the rest reads
        return {c: {"plain": got[c]["plain"], "exec": got[c][mode]} for c in names}

    scored = [points(out, mode) for (_, out), mode in zip(variants, modes)]
    print("\t".join(["committee", "k", "plain"] + [n for n, _ in variants] + ["best single", "union"]))
    rows = []
    for c in names:
        plain = scored[0][c]["plain"]
        ex = [s[c]["exec"]["n_at_k"] for s in scored]
        rows.append((plain, ex))
        print("\t".join([c, str(plain["k"]), f'{plain["n_at_k"]:.1f}'] + [f"{e:.1f}" for e in ex]
                        + [f'{plain["best_single_rate"]:.1f}', f'{plain["union"]:.1f}']))
    n = len(rows)

    def mean(xs):
        xs = list(xs)
        return sum(xs) / len(xs) if xs else float("nan")

    print("\t".join(["mean", "", f'{mean(p["n_at_k"] for p, _ in rows):.2f}']
                    + [f"{mean(e[i] for _, e in rows):.2f}" for i in range(len(variants))]
                    + [f'{mean(p["best_single_rate"] for p, _ in rows):.2f}',
                       f'{mean(p["union"] for p, _ in rows):.2f}']))
    for i, (name, _) in enumerate(variants):
        won = sum(1 for _, e in rows if e[i] > e[0] + 1e-9)
        lost = sum(1 for _, e in rows if e[i] < e[0] - 1e-9)
        above = sum(1 for p, e in rows if e[i] > p["best_single_rate"] + 1e-9)
        below = sum(1 for p, e in rows if e[i] < p["best_single_rate"] - 1e-9)
        gap = mean(e[i] - p["best_single_rate"] for p, e in rows)
        # the share of the gap between the best member and Union@k closed, as a ratio of the means
        # (a mean of per-committee ratios is ruled by committees whose gap is a pick or two)
        best = mean(p["best_single_rate"] for p, _ in rows)
        room = mean(p["union"] for p, _ in rows) - best
        share = (mean(e[i] for _, e in rows) - best) / room if room > 1e-9 else float("nan")
        print(f"{name}: against {variants[0][0]} wins {won}, loses {lost}; against the best member "
              f"above on {above}, below on {below} of {n}, mean {gap:+.2f} points, "
              f"closing {share:+.2f} of the gap between the mean best member and the mean Union@k")


if __name__ == "__main__":
    main()
