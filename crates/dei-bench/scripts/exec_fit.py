#!/usr/bin/env python3
"""Fit the offline committee's execution weights on the tune half and report them on the other.

  python3 crates/dei-bench/scripts/exec_fit.py --dei target/release/dei --out OUT \
      --repos DIR [--env-dir DIR] [--exec-jobs 2 --exec-timeout 120]

OUT is an exec_lite.py output folder whose exec cache holds the sandbox runs (run it first,
with the same --exec-timeout); ranking again with other weights then takes every run from the
cache. For each point of a small grid (GRID below) over `exec_breaks`, `exec_agreement` and the text
`agreement`, every committee ranks the tune
half's unsettled issues (some but not all of its candidates resolve; elsewhere every ranking
scores the same) with --exec and that point's weights; the point with the most right picks over
the committees wins, ties going to the point nearest the hand-set defaults. Then the report half
is ranked with the defaults and with the winner, and both are scored over the whole report half
(settled issues keep the plain ranking, as in exec_lite.py --skip-settled). Labels choose the
weights on the tune half only; no label is read while ranking.
"""
import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half, last_point, merge_journals, settled_issues, summary  # noqa: E402

DEFAULTS = {"exec_breaks": -4.0, "exec_repro": 1.5, "exec_agreement": 4.0, "agreement": 4.0}
# 18 points: the weight of behaviour agreement against text agreement, and how hard breaking a
# test counts (one point ranks each committee's tune half once from the run cache, about 50 s on
# 2 cores).
GRID = {
    "exec_breaks": [-4.0, -8.0],
    "exec_repro": [1.5],
    "exec_agreement": [2.0, 4.0, 8.0],
    "agreement": [1.0, 2.0, 4.0],
}


def weights_json(point):
    return {
        "exec_breaks": point["exec_breaks"],
        "exec_repro_changed": point["exec_repro"],
        "exec_repro_same": -point["exec_repro"],
        "exec_agreement": point["exec_agreement"],
        "agreement": point["agreement"],
    }


def distance(point):
    """How far a point is from the defaults, in grid steps (ties go to the nearest)."""
    return sum(abs(GRID[k].index(point[k]) - GRID[k].index(DEFAULTS[k])) for k in GRID)


class Ranker:
    def __init__(self, a, tmp):
        self.a, self.tmp = a, tmp
        self.tasks = [json.loads(l) for l in open(os.path.join(a.out, "tasks.jsonl"))]
        self.committees = {}

    def write(self, name, rows):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        return path

    def committee(self, name):
        """The committee's labelled candidates and settled issues (read once)."""
        if name not in self.committees:
            path = os.path.join(self.a.out, f"{name}-labelled.jsonl")
            labelled = [json.loads(l) for l in open(path)]
            self.committees[name] = (labelled, settled_issues(labelled))
        return self.committees[name]

    def evaluate(self, name, ids, scores, tag):
        """`dei eval` of `scores` over the issues `ids`: the last point of its curve."""
        labelled, _ = self.committee(name)
        lab = self.write(f"{tag}-{name}-lab.jsonl", [c for c in labelled if c["instance_id"] in ids])
        tasks = self.write(f"{tag}-{name}-evtasks.jsonl", [t for t in self.tasks if t["instance_id"] in ids])
        ev = os.path.join(self.tmp, f"{tag}-{name}-eval.json")
        subprocess.run([self.a.dei, "eval", lab, "--tasks", tasks, "--scores", scores, "--bootstrap", "0",
                        "--coverage", "all", "--json", ev], check=True, stdout=subprocess.DEVNULL)
        return last_point(ev)

    def rank(self, name, split, point, tag):
        """Rank `name`'s unsettled issues of `split` with --exec and `point`'s weights; the run
        directory, or None when no issue is unsettled."""
        labelled, settled = self.committee(name)
        ids = {t["instance_id"] for t in self.tasks
               if half(t["instance_id"]) == split and t["instance_id"] not in settled}
        if not ids:
            return None, ids
        tasks = self.write(f"{tag}-{name}-tasks.jsonl", [t for t in self.tasks if t["instance_id"] in ids])
        blind = self.write(f"{tag}-{name}-cands.jsonl",
                           [{k: v for k, v in c.items() if k != "resolved"}
                            for c in labelled if c["instance_id"] in ids])
        wfile = os.path.join(self.tmp, f"{tag}-weights.json")
        with open(wfile, "w") as f:
            json.dump(weights_json(point), f)
        rd = os.path.join(self.tmp, f"{tag}-{name}-run")
        shutil.rmtree(rd, ignore_errors=True)
        cmd = [self.a.dei, "rank", blind, "--tasks", tasks, "--all", "--repos", self.a.repos,
               "--run-dir", rd, "--no-progress", "--exec", "--exec-cache",
               os.path.join(self.a.out, "exec-cache"), "--exec-jobs", self.a.exec_jobs,
               "--exec-timeout", self.a.exec_timeout, "--offline-weights", wfile]
        if self.a.env_dir:
            cmd += ["--env-dir", self.a.env_dir]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return rd, ids

    def right_picks(self, name, rd, ids, tag):
        """Expected right picks (1@k times issues) of a run directory over `ids`."""
        p = self.evaluate(name, ids, rd, tag)
        return p["n_at_k"] * p["instances"] / 100.0

    def report_half(self, name, point, tag):
        """1@k over the whole report half: unsettled issues ranked with `point`, settled ones
        with the plain ranking."""
        _, settled = self.committee(name)
        rd, _ = self.rank(name, "report", point, tag)
        scores = os.path.join(self.tmp, f"{tag}-{name}-scores.jsonl")
        journal = os.path.join(rd, "journal.jsonl") if rd else os.path.join(self.tmp, "none")
        merge_journals(journal, os.path.join(self.a.out, name, "plain", "journal.jsonl"), settled, scores)
        keep = {t["instance_id"] for t in self.tasks if half(t["instance_id"]) == "report"}
        return self.evaluate(name, keep, scores, tag)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dei", required=True)
    ap.add_argument("--out", required=True, help="an exec_lite.py output folder")
    ap.add_argument("--repos", required=True)
    ap.add_argument("--env-dir", default=None)
    ap.add_argument("--committees", default="all14,A,acr5")
    ap.add_argument("--exec-jobs", default="2")
    ap.add_argument("--exec-timeout", default="120")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="exec-fit-")
    r = Ranker(a, tmp)
    names = a.committees.split(",")
    keys = list(GRID)
    results = []
    for i, values in enumerate(itertools.product(*(GRID[k] for k in keys))):
        point = dict(zip(keys, values))
        tag = f"p{i}"
        picks = {}
        for name in names:
            rd, ids = r.rank(name, "tune", point, tag)
            picks[name] = round(r.right_picks(name, rd, ids, tag), 3) if rd else 0.0
        results.append({"point": point, "tune_right_picks": picks, "sum": round(sum(picks.values()), 3)})
        print(json.dumps(results[-1]), flush=True)
    best = max(results, key=lambda x: (x["sum"], -distance(x["point"])))
    default = next(x for x in results if x["point"] == DEFAULTS)
    out = {"grid": GRID, "tune": {"default": default, "best": best}, "report": {}}
    for name in names:
        d = r.report_half(name, DEFAULTS, "rdefault")
        b = r.report_half(name, best["point"], "rbest")
        out["report"][name] = summary(d, {"1@k default": d["n_at_k"], "1@k fitted": b["n_at_k"]})
    print(json.dumps(out, indent=1))
    with open(os.path.join(a.out, "fit.json"), "w") as f:
        json.dump({"points": results, **out}, f, indent=1)


if __name__ == "__main__":
    main()
