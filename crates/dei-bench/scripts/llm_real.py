#!/usr/bin/env python3
"""The LLM committee against a real model server on SWE-bench Lite issues with a bundled
repository (requests, flask, pytest): one `dei rank --llm` per issue, then a summary of what
the calls did and what the committee picked.

    python3 crates/dei-bench/scripts/llm_real.py --dei target/release/dei --data ../shared/data \
        --repos REPOS --out OUT --llm llamacpp:gemma-3-270m --base-url http://127.0.0.1:8080/v1 \
        [--first 5] [--output-format tags] [--offline]

Issues are the Lite instances whose repository is in REPOS, in instance-id order (`--first N`
takes the first N). Each issue's ranking goes to OUT/ID.json, every call to OUT/ledger.jsonl,
replies to OUT/cache (a rerun asks nothing again). The summary (OUT/summary.json, and printed):

- calls: replies, how many were usable at their ask (`ok`), cut at a limit, or not parsed;
- time: dei's wall time over all issues beside the server's own time on the calls (llama.cpp's
  `timings`), and dei's share of it;
- tokens per issue, in and out;
- 1@k of the committee (a tie at the top counts as the share of its candidates that resolve the
  issue, as `dei eval` counts it) beside Average@k, the best single run over the same issues, and (with
  `--offline`) the offline committee on the same issues.

Labels (`resolved`) are read only to score the picks.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dei", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--repos", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--llm", required=True)
    ap.add_argument("--base-url")
    ap.add_argument("--first", type=int)
    ap.add_argument("--output-format")
    ap.add_argument("--offline", action="store_true", help="also rank with the offline committee")
    ap.add_argument("--timeout", default="600")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    cands_file = os.path.join(a.data, "lite_candidates.jsonl")
    tasks_file = os.path.join(a.data, "swebench_lite", "test.jsonl")
    have = set(os.listdir(a.repos))
    ids = []
    for line in open(tasks_file):
        t = json.loads(line)
        if t["repo"].replace("/", "__") in have:
            ids.append(t["instance_id"])
    ids.sort()
    if a.first:
        ids = ids[: a.first]
    resolved = {}
    runs = defaultdict(dict)
    for line in open(cands_file):
        c = json.loads(line)
        if c["instance_id"] in ids:
            resolved[(c["instance_id"], c["run"])] = bool(c.get("resolved"))
            runs[c["run"]][c["instance_id"]] = bool(c.get("resolved"))
    ledger = os.path.join(a.out, "ledger.jsonl")
    wall = 0.0
    picks = {}
    offline_picks = {}
    for n, iid in enumerate(ids, 1):
        out_json = os.path.join(a.out, f"{iid}.json")
        cmd = [a.dei, "rank", cands_file, "--tasks", tasks_file, "--issue", iid, "--repos", a.repos,
               "--llm", a.llm, "--cache", os.path.join(a.out, "cache"), "--ledger", ledger,
               "--timeout", a.timeout, "--json", out_json]
        if a.base_url:
            cmd += ["--base-url", a.base_url]
        if a.output_format:
            cmd += ["--output-format", a.output_format]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        took = time.monotonic() - t0
        wall += took
        last = [l for l in p.stderr.splitlines() if l.startswith("llm ")]
        print(f"[{n}/{len(ids)}] {iid}: exit {p.returncode}, {took:.0f} s; {last[-1] if last else p.stderr.strip()[-300:]}",
              flush=True)
        picks[iid] = top(out_json)
        if a.offline:
            off_json = os.path.join(a.out, f"{iid}.offline.json")
            subprocess.run([a.dei, "rank", cands_file, "--tasks", tasks_file, "--issue", iid, "--repos",
                            a.repos, "--json", off_json], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={k: v for k, v in os.environ.items() if k != "DEI_LLM"})
            offline_picks[iid] = top(off_json)
    lines = [json.loads(l) for l in open(ledger)] if os.path.exists(ledger) else []
    replies = [l for l in lines if not l["result"].startswith("error:")]
    sent = [l for l in replies if not l["cached"]]
    server_s = sum(l.get("server_ms", 0) for l in sent) / 1000.0
    summary = {
        "issues": len(ids),
        "calls": {
            "replies": len(replies),
            "ok": sum(l["result"] == "ok" for l in replies),
            "cut": sum(l["result"].startswith("cut:") for l in replies),
            "unparseable": sum(l["result"].startswith("unparseable:") for l in replies),
            "failed_requests": len(lines) - len(replies),
        },
        "time": {"dei_wall_s": round(wall, 1), "server_s": round(server_s, 1),
                 "dei_share": round(1 - server_s / wall, 4) if wall else None},
        "tokens_per_issue": {"input": round(sum(l["input_tokens"] for l in sent) / max(len(ids), 1)),
                             "output": round(sum(l["output_tokens"] for l in sent) / max(len(ids), 1))},
        "one_at_k": score(picks, resolved),
        "offline_one_at_k": score(offline_picks, resolved) if a.offline else None,
        "average_at_k": round(100 * sum(
            sum(v for (i, _), v in resolved.items() if i == iid) / max(1, sum(1 for (i, _) in resolved if i == iid))
            for iid in ids) / max(len(ids), 1), 1),
        "best_single": max(((r, round(100 * sum(v.get(i, False) for i in ids) / len(ids), 1))
                            for r, v in runs.items() if all(i in v for i in ids)), key=lambda x: x[1], default=None),
    }
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    print(json.dumps(summary, indent=1))


def top(path):
    """The runs sharing the top place in a dei rank JSON (empty when nothing was ranked or the
    top is unscored)."""
    try:
        v = json.load(open(path))
    except (OSError, ValueError):
        return []
    ranked = v.get("ranked") or []
    if not ranked or ranked[0].get("review", {}).get("unscored") or ranked[0].get("status") == "unscored":
        return []
    return [r.get("agent") for r in ranked if r.get("rank") == ranked[0].get("rank")]


def score(picks, resolved):
    """1@k as the ranking counts it: of the t candidates sharing the top place, c resolve the
    issue, and the issue counts c/t (no tie is broken)."""
    if not picks:
        return None
    credit = sum(sum(resolved.get((iid, run), False) for run in runs) / len(runs)
                 for iid, runs in picks.items() if runs)
    return round(100 * credit / len(picks), 1)


if __name__ == "__main__":
    sys.exit(main())
