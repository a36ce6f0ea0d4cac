#!/usr/bin/env python3
"""A trial, not in `dei`: an agent's track record read from execution evidence alone (no labels).

Over the issues an exec_lite.py output folder ranked with --exec, each agent's "health" is the
share of its candidates that ran and did nothing the sandbox counts against them: broke no test
that passed twice at base, did not break the reproduction, and did not leave the reproduction as
at base while another candidate changed it. Its prior is that share minus the mean over agents,
computed leaving the issue being ranked out (its record on the other issues). The score becomes
`score + w * prior`; the top pick is re-read (ties as expected value) and scored with the labels.

  python3 crates/dei-bench/scripts/exec_prior.py --out OUT [--weights 0,1,2,4,8]

Prints, per committee and weight, right picks over the ranked issues of each half of the shared
split. The weight is chosen on the tune half (most right picks summed over the committees, ties to
the smallest weight); the report half is for reporting only. The issues are those --skip-settled
ranked (chosen with the labels: some but not all candidates resolve), so the records come from a
label-chosen sample; in use they would come from every issue of a run.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half, journal_results, labels as read_labels  # noqa: E402


def healthy(c, ranked):
    """1 or 0 for a candidate that ran, None when nothing ran for it."""
    b = c.get("behaviour") or {}
    if b.get("class") is None:
        return None
    if b.get("broken") or b.get("repro") == "broken":
        return 0.0
    others_change = any((o.get("behaviour") or {}).get("repro") == "changed"
                        for o in ranked if o is not c)
    if b.get("repro") == "same" and others_change:
        return 0.0
    return 1.0


def priors(results, iids):
    seen = collections.defaultdict(list)
    for i in iids:
        ranked = results[i]["ranked"]
        for c in ranked:
            h = healthy(c, ranked)
            if h is not None:
                seen[c["agent"]].append(h)
    share = {a: sum(v) / len(v) for a, v in seen.items()}
    if not share:
        return {}
    mean = sum(share.values()) / len(share)
    return {a: v - mean for a, v in share.items()}


def right(results, labels, iid, prior, w):
    ranked = results[iid]["ranked"]
    if not ranked:
        return 0.0
    scored = [(c["score"] + w * prior.get(c["agent"], 0.0), c["agent"]) for c in ranked]
    top = max(s for s, _ in scored)
    tops = [a for s, a in scored if abs(s - top) < 1e-9]
    return sum(labels.get((iid, a), False) for a in tops) / len(tops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="an exec_lite.py output folder")
    ap.add_argument("--committees", default="all14,A,acr5")
    ap.add_argument("--weights", default="0,1,2,4,8")
    a = ap.parse_args()
    weights = [float(w) for w in a.weights.split(",")]
    table = {}
    for name in a.committees.split(","):
        labels = read_labels(os.path.join(a.out, f"{name}-labelled.jsonl"))
        results = journal_results(os.path.join(a.out, name, "exec"))
        iids = sorted(results)
        loo = {i: priors(results, [j for j in iids if j != i]) for i in iids}
        for w in weights:
            for h in ("tune", "report"):
                ids = [i for i in iids if half(i) == h]
                got = sum(right(results, labels, i, loo[i], w) for i in ids)
                table[(name, w, h)] = (got, len(ids))
    tune_sum = {w: sum(table[(n, w, "tune")][0] for n in a.committees.split(",")) for w in weights}
    best = min(weights, key=lambda w: (-tune_sum[w], w))
    for name in a.committees.split(","):
        for w in weights:
            t, r = table[(name, w, "tune")], table[(name, w, "report")]
            print(f"{name:6} w={w:g}  tune {t[0]:.2f}/{t[1]}  report {r[0]:.2f}/{r[1]}")
    print("tune-half sums:", {f"{w:g}": round(v, 2) for w, v in tune_sum.items()}, "chosen w:", best)


if __name__ == "__main__":
    main()
