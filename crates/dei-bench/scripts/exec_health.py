#!/usr/bin/env python3
"""Where an `--exec` committee's picks gain or lose against one agent's candidates: per half of the
shared split, the issues counted by how that agent's candidate ran (healthy, or the first thing held
against it: a broken test, the reproduction broken, or left as at base while another candidate
changed it; `none` when nothing ran for it, `absent` when it has no candidate), whether it is
resolved, and the share of the committee's pick that is. The agent defaults to the committee's best
single member over the issues read. Labels only score; nothing here ranks.

  python3 crates/dei-bench/scripts/exec_health.py RUN_DIR LABELLED.jsonl [--agent NAME] [--list tune|report]

RUN_DIR is a `dei rank --all --exec --run-dir` folder; LABELLED.jsonl the committee's candidates with
their `resolved` labels (exec_lite.py writes OUT/NAME-labelled.jsonl). With the record's order the pick
is that agent's candidate wherever it ran healthy and its record is the best, so the other rows say
where the committee can gain on it or lose to it. `--list` prints the issues of that half whose row
is not `healthy`.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half, journal_results, labels as read_labels  # noqa: E402
from exec_prior import fails_written, healthy, left_as_base  # noqa: E402


def state(c, ranked):
    """How candidate `c` ran: healthy, the first thing held against it, or none."""
    b = c.get("behaviour") or {}
    h = healthy(c, ranked)
    if h is None:
        return "none"
    if h:
        return "healthy"
    if b.get("broken"):
        return "broke a test"
    if b.get("repro") == "broken":
        return "broke the reproduction"
    if left_as_base(c, ranked):
        return "left the reproduction as at base"
    assert fails_written(c, ranked), "unhealthy for no reason this script knows"
    return "failed another agent's tests"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("labelled")
    ap.add_argument("--agent", default=None)
    ap.add_argument("--list", choices=["tune", "report"], default=None)
    a = ap.parse_args()
    labels = read_labels(a.labelled)
    issues = journal_results(a.run_dir)
    agent = a.agent
    if agent is None:
        solved = collections.Counter(ag for (i, ag), r in labels.items() if r and i in issues)
        agent = solved.most_common(1)[0][0]
    rows = collections.Counter()
    listed = []
    for iid, r in sorted(issues.items()):
        ranked = r.get("ranked") or []
        if not ranked:
            continue
        tops = [c for c in ranked if c.get("rank") == 1] or [c for c in ranked if c["score"] == ranked[0]["score"]]
        pick = sum(labels.get((iid, c["agent"]), False) for c in tops) / len(tops)
        mine = [c for c in ranked if c["agent"] == agent]
        st = state(mine[0], ranked) if mine else "absent"
        right = labels.get((iid, agent), False)
        h = half(iid)
        rows[(h, st, right)] += 1
        rows[(h, st, "pick")] += pick
        if a.list == h and st != "healthy":
            listed.append((iid, st, right, pick, [c["agent"] for c in tops]))
    print(f"agent: {agent}")
    for h in ("tune", "report"):
        print(f"== {h}: its candidate | issues | it is right | the pick is right")
        for st in ("healthy", "broke a test", "broke the reproduction", "left the reproduction as at base",
                   "failed another agent's tests", "none", "absent"):
            n = rows[(h, st, True)] + rows[(h, st, False)]
            if n:
                print(f"  {st:34} {n:4} {rows[(h, st, True)]:4} {rows[(h, st, 'pick')]:6.1f}")
    for row in listed:
        print(*row)


if __name__ == "__main__":
    main()
