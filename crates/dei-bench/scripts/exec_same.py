#!/usr/bin/env python3
"""Compare two `dei rank --all` run directories issue by issue: the same picks, ranks, scores,
reasons, score parts and, with --exec, the same evidence? For showing that a change meant to keep the
rankings (a refactor, a review's mend) keeps them, and for listing what a change of evidence
moved. No labels are read.

  python3 crates/dei-bench/scripts/exec_same.py RUN_A RUN_B [--show N]

Each RUN is a `--run-dir` folder (its journal.jsonl; the last line per issue counts). What a
rerun may change without changing a ranking is left out: elapsed time, and the run counters
(runs, cached_runs, run_seconds, env_seconds, cpu_seconds). Exits 0 when every issue both hold is the same
and both hold the same issues, 1 otherwise.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import journal_results  # noqa: E402

# Counters of how the evidence was gathered, not what it is.
COSTS = ("runs", "cached_runs", "run_seconds", "env_seconds", "cpu_seconds")


def ranking(result):
    """Per candidate, in rank order: what the ranking shows."""
    return [
        {k: c.get(k) for k in ("agent", "rank", "score", "tied", "status", "reason", "behaviour", "review")}
        for c in result.get("ranked", [])
    ]


def evidence(result):
    """The issue's execution record, its costs left out."""
    e = dict(result.get("exec") or {})
    for k in COSTS:
        e.pop(k, None)
    return e


def first_difference(a, b, path=""):
    """Where two JSON values first differ, as a path and the two values (None when equal)."""
    if type(a) is not type(b):
        return path or ".", a, b
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}", a.get(k), b.get(k)
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})", a, b
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else (path or ".", a, b)


def short(v, n=160):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= n else s[:n] + "…"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("--show", type=int, default=10, help="differences printed in full (default 10)")
    a = ap.parse_args()
    ra, rb = journal_results(a.run_a), journal_results(a.run_b)
    if not ra or not rb:
        sys.exit(f"no journal results in {a.run_a if not ra else a.run_b}")
    only_a, only_b = sorted(set(ra) - set(rb)), sorted(set(rb) - set(ra))
    both = sorted(set(ra) & set(rb))
    picks = ranks = evid = 0
    shown = 0
    for iid in both:
        x, y = ra[iid], rb[iid]
        pa = (x.get("ranked") or [{}])[0].get("agent")
        pb = (y.get("ranked") or [{}])[0].get("agent")
        diffs = []
        if pa != pb:
            picks += 1
            diffs.append(("pick", pa, pb))
        d = first_difference(ranking(x), ranking(y), "ranked")
        if d:
            ranks += 1
            diffs.append(d)
        d = first_difference(evidence(x), evidence(y), "exec")
        if d:
            evid += 1
            diffs.append(d)
        for path, u, v in diffs:
            if shown < a.show:
                print(f"{iid}: {path}\n  A: {short(u)}\n  B: {short(v)}")
            shown += 1
    print(
        f"{len(both)} issues in both: {picks} picks differ, {ranks} rankings differ, "
        f"{evid} execution records differ (costs left out)"
        + (f"; only in A: {len(only_a)}" if only_a else "")
        + (f"; only in B: {len(only_b)}" if only_b else "")
    )
    same = not (picks or ranks or evid or only_a or only_b)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
