#!/usr/bin/env python3
"""Show, per issue, how `dei rank --exec` ranked the candidates and what the sandbox saw, beside
the labels: for reading where the committee picks wrong (on the tune half only).

  python3 crates/dei-bench/scripts/exec_picks.py RUN_DIR LABELLED.jsonl [--only-wrong]

RUN_DIR is a `dei rank --all --run-dir` folder (its journal.jsonl; the last line per issue
counts); LABELLED.jsonl the candidates with their `resolved` labels (exec_lite.py writes
OUT/NAME-labelled.jsonl). One line per candidate, best first: `R` when resolved, the score, the
agent, its behaviour (class, broken tests, reproduction against base, model test) and the parts.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import journal_results, labels as read_labels  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("labelled")
    ap.add_argument("--only-wrong", action="store_true", help="issues whose top pick is unresolved while some candidate resolves")
    a = ap.parse_args()
    labels = read_labels(a.labelled)
    issues = journal_results(a.run_dir)
    for iid in sorted(issues):
        r = issues[iid]
        ranked = r.get("ranked") or []
        if not ranked:
            continue
        # The pick is what ranks first (over a run the record's order can put a lower score there).
        tops = [c for c in ranked if c.get("rank") == 1] or [c for c in ranked if c["score"] == ranked[0]["score"]]
        hit = sum(labels.get((iid, c["agent"]), False) for c in tops) / len(tops)
        any_r = any(labels.get((iid, c["agent"]), False) for c in ranked)
        if a.only_wrong and (hit == 1.0 or not any_r):
            continue
        e = r.get("exec") or {}
        print(f"== {iid}  pick={hit:.2f}  any={any_r}  classes={e.get('classes')} repro={e.get('reproduction')} "
              f"base={json.dumps(e.get('repro_base'))[:80]} stable={e.get('stable_tests')} files={len(e.get('test_files') or [])}")
        for c in ranked:
            b = c.get("behaviour") or {}
            parts = (c.get("review") or {}).get("score", {}).get("parts", [])
            beh = f"c{b.get('class', '-')}"
            if b.get("broken"):
                beh += f" broke{len(b['broken'])}"
            if b.get("repro"):
                beh += f" repro:{b['repro']}"
            if b.get("model_test"):
                beh += f" mt:{b['model_test']}"
            beh += f" t{b.get('tests_run', 0)}"
            lab = "R" if labels.get((iid, c["agent"]), False) else "."
            ps = " ".join(f"{n[:14]}={v:g}" for n, v in parts)
            print(f"  {lab} {c['score']:6.2f} {c['agent'][:34]:34} {beh:28} {ps}")


if __name__ == "__main__":
    main()
