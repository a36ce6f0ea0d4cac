#!/usr/bin/env python3
"""Each part of the offline committee's score removed in turn, read from the rankings that
`offline_committees.py` wrote (no ranking is redone): a candidate's score is
`1 + 9·σ(raw/4)` in hundredths, `raw` the sum of its parts (`review.score.parts` in the
journal), so leaving a part out of the sum is exactly the committee without that rule.

  python3 crates/dei-bench/scripts/offline_ablation.py --out OUT [--build head] \
      [--split tune] [--committees all14,A,acr5,B,C,o1,...]

OUT is offline_committees.py's folder (its committees.json and OUT/BUILD/NAME/journal.jsonl).
For every rule: 1@k (ties at the top as expected value) averaged over the committees, on the
chosen half, with and without it; the paired difference pooled over (committee, issue) with
its 95% bootstrap interval (1000 resamples, seed 7); the committees where it moves the pick's
credit up and down; and how many issues' picks move at all. Labels are read only to score the
picks.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from offline_committees import bootstrap, half, last_lines, pair_labels  # noqa: E402

RULES = {
    "applies": {"drop": ["applies"]},
    "syntax errors": {"drop": ["introduces syntax errors"]},
    "agreement": {"drop": ["agreement"]},
    "location (file / definition named)": {"drop": ["edits a file the issue names",
                                                    "edits a definition the issue names"]},
    "debug output": {"drop": ["debug output"]},
    "shape (large, scattered)": {"drop": ["large", "scattered"]},
}


def squash(raw, scale=4.0):
    v = 1 + 9 / (1 + math.exp(-raw / scale))
    return min(max(round(v * 100) / 100, 1.01), 10.0)


def rescored(ranked, weigh=None):
    """Each reviewed candidate's score re-summed from its parts, each part's value passed
    through `weigh(name, value)` (None leaves the part out); without `weigh`, the scores as
    ranked. Rule-scored and unscored candidates stay as they were."""
    out = []
    for c in ranked:
        parts = (c.get("review") or {}).get("score", {}).get("parts") or []
        if c.get("status") != "reviewed" or not parts:
            out.append((c["agent"], c.get("score"), c.get("status")))
            continue
        if weigh is None:
            out.append((c["agent"], c["score"], c["status"]))
            continue
        raw = sum(w for w in (weigh(name, v) for name, v in parts) if w is not None)
        out.append((c["agent"], squash(raw), c["status"]))
    return out


def without(rule):
    """The `weigh` of a RULES entry: its parts dropped or set; None for no rule."""
    if rule is None:
        return None
    return lambda name, v: None if name in rule.get("drop", []) else rule.get("set", {}).get(name, v)


def pick(scored):
    """The candidates sharing the top: reviewed before rule-scored, unscored last."""
    order = {"reviewed": 0, "unscored": 1, "rule": 2}
    best = min(order.get(s, 1) for _, _, s in scored)
    group = [(a, v) for a, v, s in scored if order.get(s, 1) == best and v is not None]
    if not group:
        return []
    top = max(v for _, v in group)
    return sorted(a for a, v in group if v == top)


def parse_args():
    """The options every reader of offline_committees.py's rankings takes (`--out`, `--build`,
    `--data`, `--split`, `--committees`)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--build", default="head")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--split", default="tune")
    ap.add_argument("--committees", default="")
    return ap.parse_args()


def committee_rankings(a):
    """(name, outcomes, rows) per committee of `a.committees` (every committee of committees.json
    when empty) that build `a.build` ranked: `outcomes` every issue its run ranked without an
    error, `rows` those of them in the half `a.split`; a committee with none there is left out."""
    comms = json.load(open(os.path.join(a.out, "committees.json")))
    for n in [n for n in a.committees.split(",") if n] or list(comms):
        path = os.path.join(a.out, a.build, n, "journal.jsonl")
        if not os.path.exists(path):
            continue
        outcomes = [o for o in last_lines(path).values() if not o.get("error_kind")]
        rows = [o for o in outcomes if a.split == "all" or half(o["instance_id"]) == a.split]
        if rows:
            yield n, outcomes, rows


def credit(lab, o, p):
    """The pick `p`'s credit on outcome `o` in percent: the share of its candidates that resolve."""
    return 100 * sum(lab.get((o["instance_id"], x), False) for x in p) / len(p) if p else 0.0


def compared(vals, base, pairs, base_pairs):
    """A variant against the committees as ranked: its mean 1@k over the committees (`vals`, one
    a committee, beside `base`), the paired change pooled over (committee, issue) (`pairs` beside
    `base_pairs`) with its 95% interval, and the committees it moves up and down."""
    m, lo, hi = bootstrap([x - y for x, y in zip(pairs, base_pairs)])
    up = sum(1 for x, y in zip(vals, base) if x > y + 1e-9)
    down = sum(1 for x, y in zip(vals, base) if x < y - 1e-9)
    return sum(vals) / len(vals), (m, lo, hi), up, down


def main():
    a = parse_args()
    lab, _ = pair_labels(a.data)
    rules = {"(none removed)": None, **RULES}
    table = {r: [] for r in rules}
    pairs = {r: [] for r in rules}
    moved = {r: 0 for r in rules}
    issues = 0
    for _, _, rows in committee_rankings(a):
        issues += len(rows)
        as_ranked = [pick(rescored(o["result"]["ranked"])) for o in rows]
        for r, rule in rules.items():
            credits = []
            for o, p0 in zip(rows, as_ranked):
                p = pick(rescored(o["result"]["ranked"], without(rule)))
                if p != p0:
                    moved[r] += 1
                credits.append(credit(lab, o, p))
            pairs[r].extend(credits)
            table[r].append(sum(credits) / len(credits))
    base = table["(none removed)"]
    print(f"{len(base)} committees, {issues} (committee, issue) pairs, {a.split} half, build {a.build}")
    print(f"{'rule removed':<38} {'mean 1@k':>8} {'change':>7} {'pooled change [95%]':>23} "
          f"{'up':>3} {'down':>4} {'picks moved':>11}")
    for r in rules:
        if not table[r]:
            continue
        mean, (m, lo, hi), up, down = compared(table[r], base, pairs[r], pairs["(none removed)"])
        print(f"{r:<38} {mean:8.2f} {mean - sum(base) / len(base):+7.2f} "
              f"{m:+7.2f} [{lo:+6.2f}, {hi:+6.2f}] {up:>3} {down:>4} {moved[r]:>11}")


if __name__ == "__main__":
    main()
