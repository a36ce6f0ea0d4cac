#!/usr/bin/env python3
"""Leave one generation out: the offline committee's weights chosen on one generation of agents
and read on the other, from the rankings `offline_committees.py` wrote (no ranking is redone).

  python3 crates/dei-bench/scripts/offline_generations.py --out OUT [--build head]

OUT is offline_committees.py's folder, ranked with the named committees and --draw/--draw-new
(its committees.json and OUT/BUILD/NAME/journal.jsonl). The committees fall in three groups by
their members' files, never by a label: *2024* (every member from lite_candidates.jsonl),
*new* (every member from lite_candidates_more.jsonl) and *mixed* (both).

A candidate's score is the squash of the sum of its parts (`review.score.parts`), so scaling a
part's weight is re-summing with that part scaled: exactly the committee with that weight. Over
a grid of factors for the parts that tell reviewed candidates apart (agreement, shape, location),
the factors with the highest mean 1@k on the tune half of one group are chosen (ties: the
factors nearest the defaults, 1); then, on each other group, the default weights and the chosen
ones are compared on the report half, a paired difference per (committee, issue) with its 95%
bootstrap interval (1000 resamples, seed 7). Labels are read only to score picks.
"""
import argparse
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from offline_ablation import pick, rescored  # noqa: E402
from offline_committees import bootstrap, half, last_lines, pair_labels  # noqa: E402

PARTS = {
    "agreement": ["agreement"],
    "shape": ["large", "scattered"],
    "location": ["edits a file the issue names", "edits a definition the issue names"],
}
GRID = {
    "agreement": [0.0, 0.5, 1.0, 1.5, 2.0],
    "shape": [0.0, 0.5, 1.0, 2.0],
    "location": [0.0, 1.0, 2.0],
}


def scaled(factors):
    """The `weigh` that scales each part of PARTS by its group's factor."""
    of = {name: factors[group] for group, names in PARTS.items() for name in names}
    return lambda name, v: of.get(name, 1.0) * v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--build", default="head")
    ap.add_argument("--data", default="../shared/data")
    a = ap.parse_args()
    comms = json.load(open(os.path.join(a.out, "committees.json")))
    lab, old = pair_labels(a.data)
    groups = {"2024": [], "new": [], "mixed": []}
    rows = {}
    for name, members in comms.items():
        path = os.path.join(a.out, a.build, name, "journal.jsonl")
        if not os.path.exists(path):
            continue
        last = last_lines(path)
        rows[name] = [o for o in last.values() if not o.get("error_kind")]
        n_old = sum(1 for m in members if m in old)
        groups["2024" if n_old == len(members) else "new" if n_old == 0 else "mixed"].append(name)

    def credits(names, split, factors):
        out = []
        for n in names:
            for o in rows[n]:
                if half(o["instance_id"]) != split:
                    continue
                p = pick(rescored(o["result"]["ranked"], scaled(factors)))
                out.append(sum(lab.get((o["instance_id"], x), False) for x in p) / len(p) if p else 0.0)
        return out

    def mean_1k(names, split, factors):
        # 1@k per committee, averaged over committees (each committee counts once)
        vals = []
        for n in names:
            c = credits([n], split, factors)
            if c:
                vals.append(100 * sum(c) / len(c))
        return sum(vals) / len(vals) if vals else 0.0

    default = {g: 1.0 for g in PARTS}
    combos = [dict(zip(GRID, v)) for v in itertools.product(*GRID.values())]
    print("groups: " + "; ".join(f"{g} {len(v)} ({', '.join(v)})" for g, v in groups.items()))
    report = {}
    for chosen_on, names in groups.items():
        if not names:
            continue
        scored = [(mean_1k(names, "tune", f), -sum(abs(f[g] - 1.0) for g in f), f) for f in combos]
        best = max(scored, key=lambda t: (t[0], t[1]))
        f = best[2]
        print(f"\nchosen on the tune half of {chosen_on}: "
              + ", ".join(f"{g} ×{f[g]:g}" for g in PARTS)
              + f" (tune 1@k {best[0]:.2f} against {mean_1k(names, 'tune', default):.2f} with the defaults)")
        for read_on, others in groups.items():
            if not others:
                continue
            d0 = credits(others, "report", default)
            d1 = credits(others, "report", f)
            m = bootstrap([y - x for x, y in zip(d0, d1)])
            print(f"  read on {read_on:<6} held out: defaults {mean_1k(others, 'report', default):6.2f}, "
                  f"chosen {mean_1k(others, 'report', f):6.2f}; paired {100*m[0]:+.2f} "
                  f"[{100*m[1]:+.2f}, {100*m[2]:+.2f}] over {len(d0)} (committee, issue) pairs")
            report.setdefault(chosen_on, {"factors": f})[read_on] = {
                "defaults": mean_1k(others, "report", default), "chosen": mean_1k(others, "report", f),
                "paired": [100 * x for x in m], "pairs": len(d0)}
    with open(os.path.join(a.out, "generations.json"), "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
