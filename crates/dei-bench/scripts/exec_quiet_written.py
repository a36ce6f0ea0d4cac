#!/usr/bin/env python3
"""Are the `quiet` picks that pass a test another agent wrote right more often than the other
`quiet` picks? A written test (kept only when it fails at the base commit) is one agent's reading of
the issue; this asks whether passing it should lift a pick out of `quiet` (`rank::health::pick_basis`
does not count it). Labels only score; nothing here ranks.

  python3 crates/dei-bench/scripts/exec_quiet_written.py --split tune OUT:COMMITTEE [OUT:COMMITTEE ...]

OUT is an exec_lite.py output folder, COMMITTEE one it ranked (OUT/COMMITTEE/exec/journal.jsonl,
OUT/COMMITTEE-labelled.jsonl). A tie at the top counts as expected value; a tie passes only when
every candidate in it passes.
"""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half  # noqa: E402


def passes_written(c):
    b = c.get("behaviour") or {}
    return any(ok and key != b.get("wrote") for key, ok in (b.get("written") or {}).items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="OUT:COMMITTEE")
    ap.add_argument("--split", default="tune", choices=["tune", "report", "all"])
    a = ap.parse_args()
    tally = collections.defaultdict(lambda: [0, 0.0])
    for arg in a.runs:
        out, com = arg.rsplit(":", 1)
        labels = {}
        for line in open(os.path.join(out, f"{com}-labelled.jsonl")):
            d = json.loads(line)
            labels[(d["instance_id"], d["run"])] = bool(d.get("resolved"))
        last = {}
        for line in open(os.path.join(out, com, "exec", "journal.jsonl")):
            d = json.loads(line)
            last[d["instance_id"]] = d
        for iid, d in last.items():
            if a.split != "all" and half(iid) != a.split:
                continue
            r = d["result"]
            if r.get("pick_basis") != "quiet":
                continue
            top = [c for c in r["ranked"] if c.get("rank") == 1]
            key = "pass another agent's test" if all(passes_written(c) for c in top) else "the other quiet picks"
            tally[key][0] += 1
            tally[key][1] += sum(labels.get((iid, c["agent"]), False) for c in top) / len(top)
    for key, (n, right) in sorted(tally.items()):
        print(f"{key}: {n} picks, right {100 * right / n:.1f}%")


if __name__ == "__main__":
    main()
