#!/usr/bin/env python3
"""Measure `dei rank --exec` against the plain offline committee on SWE-bench Lite, for committees
of published runs (all14, A, acr5 by default; B and C with --committees), with no labels and no LLM in
the ranking.

  python3 crates/dei-bench/scripts/exec_lite.py --dei target/release/dei \
      --data ../shared/data --repos DIR --out OUT [--repos-only psf/requests,pallets/flask]

Steps (each resumable: rank runs keep a run directory, sandbox runs a shared cache; each
ranking's sittings go to OUT/NAME-MODE-sittings.jsonl, and the report adds their wall time, a
sitting stopped midway counted up to the last issue it finished):
1. the task records, stripped of what the evaluation knows (patch, test_patch, FAIL_TO_PASS,
   PASS_TO_PASS, hints_text) and checked to hold none of it; the candidates, stripped of
   their `resolved` labels;
2. per committee, `dei rank --all` without and with `--exec`;
3. per committee, `dei eval` of each ranking against the labels (ties as expected value), over
   every instance (`--coverage all`: all-14's devin run, which covers 38 of the 140, counts as
   submitting nothing on the others, as the harness counts it).

With --draw N, N further committees r1..rN are drawn from the 13 runs that cover every instance
(devin's 38-instance subset left out), of 3, 4, 5 and 6 runs in turn: each takes the runs first in
the order of SHA-256 of "SEED:i:run" (--draw-seed). The draw reads run names only, never a label;
the members go to OUT/committees.json. They give the tune half more committees than the named five
to choose a rule on, each with its own best member. --draw-only r1,r3 ranks only those of them
(the draw itself is the same).

With --offline-weights FILE every ranking uses those weights (`dei rank --offline-weights`): a
variant of the committee's rules, ranked from the same sandbox cache.

With --exec-llm-repro PROVIDER:MODEL a third ranking per committee, `exec-llm`, adds the
reproduction test that model writes from each issue (`dei rank --exec --exec-llm-repro=MODEL`;
--exec-llm-repro-samples N asks N per issue; each --llm-arg is passed on as it is, e.g.
--llm-arg=--base-url=URL --llm-arg=--api-key-env=VAR --llm-arg=--cache=DIR). It shares the sandbox
cache, so the issue's reproduction and tests run once for both, and keeps the model's replies in
OUT/llm-cache (unless an --llm-arg names --cache or --no-cache); the report gives its 1@k beside
the others and how many issues kept a test (`exec.model_tests`). No label reaches the model: it
sees the stripped task records only.

With --skip-settled, an issue whose committee candidates all resolve it, or none do, is not
ranked with --exec: every ranking scores the same 1@k there, so its plain ranking stands in.
The labels then choose which issues the run holds, and so the issues each agent's execution
record is read over: a quick look, not a figure to report (offline_committees.py --exec ranks
every issue). The exec figures (runs, seconds, evidence) cover the ranked issues only.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

ANSWERS = ("patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS", "hints_text")
COMMITTEES = {
    "all14": None,
    "A": [
        "20240623_moatless_claude35sonnet",
        "20240604_CodeR",
        "acr-v20240408_acr-run-3",
        "sweagent-gpt4-0125_cost_2_2",
    ],
    "acr5": [
        "acr-v20240408_acr-run-1",
        "acr-v20240408_acr-run-2",
        "acr-v20240408_acr-run-3",
        "acr-v20240408_acr-val-only",
        "acr-v20240408_acr-val-sbfl",
    ],
    # Fixed after the three above were measured, without looking at labels: the runs outside
    # A and the ACR five (devin's 38-instance subset left out), a committee no rule was read off.
    "B": [
        "20240609_moatless_gpt4o",
        "20240617_moatless_gpt4o",
        "20241117_moatless_claude-3.5-sonnet-20241022",
        "sweagent-gpt4-0125_cost_2_1",
        "sweagent-gpt4-0125_cost_2_3",
    ],
    # Fixed later still, without labels: every run but the best single one, as a user who does
    # not know which agent is best would combine them (a list of runs to leave out).
    "C": {"without": ["20241117_moatless_claude-3.5-sonnet-20241022"]},
}


def draw_committees(runs, count, seed):
    """COUNT committees r1..rCOUNT of RUNS, of 3, 4, 5 and 6 runs in turn, each the runs first in
    the order of SHA-256 of "SEED:i:run". Run names only: no label is read."""
    out = {}
    for i in range(1, count + 1):
        size = 3 + (i - 1) % 4
        order = sorted(runs, key=lambda r: hashlib.sha256(f"{seed}:{i}:{r}".encode()).hexdigest())
        out[f"r{i}"] = sorted(order[:size])
    return out


def in_committee(members, run):
    """Whether a run belongs to a committee of COMMITTEES (None: every run)."""
    if members is None:
        return True
    if isinstance(members, dict):
        return run not in members["without"]
    return run in members


def half(instance_id):
    """The shared split (dei_bench::split): tune when the first byte of SHA-256 of the id is even."""
    return "tune" if hashlib.sha256(instance_id.encode()).digest()[0] % 2 == 0 else "report"


def run(cmd, log):
    t = time.time()
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        rc = subprocess.call(cmd, stdout=f, stderr=f)
    return rc, time.time() - t


def timed_rank(cmd, log, sittings_file, run_dir):
    """`run` a `dei rank`, its sitting written to SITTINGS_FILE (one JSON object a line): a start
    before it, an end after. A sitting stopped before it ended (the machine went, the measurement
    was killed) is closed when the next one starts, at the last moment it saved a finished issue
    (its journal's time), so the measurement's wall time adds up over every sitting."""
    close_stopped(sittings_file, os.path.join(run_dir, "journal.jsonl"))
    with open(sittings_file, "a") as f:
        f.write(json.dumps({"start": round(time.time(), 1)}) + "\n")
    rc, secs = run(cmd, log)
    with open(sittings_file, "a") as f:
        f.write(json.dumps({"end": round(time.time(), 1), "rc": rc}) + "\n")
    return rc, secs


def close_stopped(sittings_file, journal):
    """Ends a sitting that started and never ended at the journal's last write (or its start)."""
    if not os.path.exists(sittings_file):
        return
    lines = list(sitting_lines(sittings_file))
    if lines and "start" in lines[-1]:
        start = lines[-1]["start"]
        saved = os.path.getmtime(journal) if os.path.exists(journal) else start
        with open(sittings_file, "a") as f:
            f.write(json.dumps({"end": round(max(start, saved), 1), "stopped": True}) + "\n")


def sitting_lines(sittings_file):
    """The sittings file's records in order; a line torn by a kill mid-write (run with the next
    record appended to it) is skipped, as `journal_results` skips one."""
    for line in open(sittings_file):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict):
            yield d


def sittings(sittings_file):
    """Wall time over every sitting of one ranking: {"sittings", "stopped", "seconds"}; a sitting
    still open (running now, or stopped and not yet closed) is not counted."""
    out = {"sittings": 0, "stopped": 0, "seconds": 0.0}
    if not os.path.exists(sittings_file):
        return out
    start = None
    for d in sitting_lines(sittings_file):
        if "start" in d:
            start = d["start"]
        elif start is not None:
            out["sittings"] += 1
            out["stopped"] += bool(d.get("stopped"))
            out["seconds"] += d["end"] - start
            start = None
    out["seconds"] = round(out["seconds"], 1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dei", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--repos", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repos-only", default="")
    ap.add_argument("--instances", default="", help="comma-separated instance ids (default: all)")
    ap.add_argument("--split", default="all", choices=["all", "tune", "report"],
                    help="the shared split's half (dei_bench::split: first byte of SHA-256 of the id even = tune)")
    ap.add_argument("--committees", default="all14,A,acr5")
    ap.add_argument("--exec-jobs", default="1")
    ap.add_argument("--exec-timeout", default="120")
    ap.add_argument("--env-dir", default=None, help="where environments are built (dei's default when omitted)")
    ap.add_argument("--draw", type=int, default=0,
                    help="also rank N committees r1..rN drawn from the 13 runs that cover every instance")
    ap.add_argument("--draw-seed", default="dei-committees")
    ap.add_argument("--draw-only", default="",
                    help="with --draw, rank only these of the drawn committees (comma-separated: r1,r3)")
    ap.add_argument("--offline-weights", default=None,
                    help="rank with these offline weights (dei rank --offline-weights)")
    ap.add_argument("--exec-llm-repro", default=None, metavar="PROVIDER:MODEL",
                    help="also rank with the reproduction test this model writes (the exec-llm ranking)")
    ap.add_argument("--exec-llm-repro-samples", default=None, metavar="N")
    ap.add_argument("--llm-arg", action="append", default=[],
                    help="passed on to the exec-llm ranking as it is (--llm-arg=--base-url=URL); repeatable")
    ap.add_argument("--skip-settled", action="store_true",
                    help="rank with --exec only issues where some but not all of the committee's candidates resolve")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "log.txt")
    wanted = set(filter(None, a.repos_only.split(",")))
    only = set(filter(None, a.instances.split(",")))
    have = set(os.listdir(a.repos))

    # 1. Tasks without the evaluation's answers; candidates without labels.
    tasks = []
    for line in open(os.path.join(a.data, "swebench_lite/test.jsonl")):
        t = json.loads(line)
        if wanted and t["repo"] not in wanted:
            continue
        if only and t["instance_id"] not in only:
            continue
        if a.split != "all" and half(t["instance_id"]) != a.split:
            continue
        if t["repo"].replace("/", "__") not in have:
            continue
        for k in ANSWERS:
            t.pop(k, None)
        tasks.append(t)
    assert tasks, "no task has a repository under --repos"
    assert not any(k in t for t in tasks for k in ANSWERS)
    tasks_file = os.path.join(a.out, "tasks.jsonl")
    with open(tasks_file, "w") as f:
        for t in tasks:
            f.write(json.dumps(t) + "\n")
    ids = {t["instance_id"] for t in tasks}
    cands = [json.loads(l) for l in open(os.path.join(a.data, "lite_candidates.jsonl"))]
    # the runs of every instance, so that a draw is the same whichever instances are ranked
    full = sorted({c["run"] for c in cands} - {"devin_20240312_subset"})
    cands = [c for c in cands if c["instance_id"] in ids]
    committees = [n for n in a.committees.split(",") if n]
    if a.draw:
        drawn = draw_committees(full, a.draw, a.draw_seed)
        COMMITTEES.update(drawn)
        only = [n for n in a.draw_only.split(",") if n]
        unknown = [n for n in only if n not in drawn]
        assert not unknown, f"--draw-only names committees not drawn: {unknown}"
        committees += [n for n in drawn if not only or n in only]
        with open(os.path.join(a.out, "committees.json"), "w") as f:
            json.dump({"seed": a.draw_seed, "committees": drawn}, f, indent=1)
    modes = ("plain", "exec") + (("exec-llm",) if a.exec_llm_repro else ())
    results = {}
    for name in committees:
        members = COMMITTEES[name]
        mine = [c for c in cands if in_committee(members, c["run"])]
        labelled = os.path.join(a.out, f"{name}-labelled.jsonl")
        blind = os.path.join(a.out, f"{name}-candidates.jsonl")
        with open(labelled, "w") as f, open(blind, "w") as g:
            for c in mine:
                f.write(json.dumps(c) + "\n")
                g.write(json.dumps({k: v for k, v in c.items() if k != "resolved"}) + "\n")
        settled = settled_issues(mine) if a.skip_settled else set()
        for mode in modes:
            rd = os.path.join(a.out, name, mode)
            mode_tasks, mode_blind = tasks_file, blind
            with_exec = mode != "plain"
            if with_exec and settled:
                mode_tasks = os.path.join(a.out, f"{name}-exec-tasks.jsonl")
                mode_blind = os.path.join(a.out, f"{name}-exec-candidates.jsonl")
                with open(mode_tasks, "w") as f:
                    for t in tasks:
                        if t["instance_id"] not in settled:
                            f.write(json.dumps(t) + "\n")
                with open(mode_blind, "w") as f:
                    for line in open(blind):
                        if json.loads(line)["instance_id"] not in settled:
                            f.write(line)
            cmd = [a.dei, "rank", mode_blind, "--tasks", mode_tasks, "--all", "--repos", a.repos,
                   "--run-dir", rd, "--no-progress"]
            if a.offline_weights:
                cmd += ["--offline-weights", a.offline_weights]
            if with_exec:
                cmd += ["--exec", "--exec-cache", os.path.join(a.out, "exec-cache"),
                        "--exec-jobs", a.exec_jobs, "--exec-timeout", a.exec_timeout]
                if a.env_dir:
                    cmd += ["--env-dir", a.env_dir]
            if mode == "exec-llm":
                cmd += [f"--exec-llm-repro={a.exec_llm_repro}"] + a.llm_arg
                if not any(x.split("=")[0] in ("--cache", "--no-cache") for x in a.llm_arg):
                    # the replies stay with the measurement (a rerun asks nothing again),
                    # not in a .dei/cache of whatever folder this was started from
                    cmd += ["--cache", os.path.join(a.out, "llm-cache")]
                if a.exec_llm_repro_samples:
                    cmd += ["--exec-llm-repro-samples", a.exec_llm_repro_samples]
            if with_exec and settled and not any(t["instance_id"] not in settled for t in tasks):
                rc, secs = 0, 0.0  # every issue is settled: nothing to rank with --exec
            else:
                rc, secs = timed_rank(cmd, log, os.path.join(a.out, f"{name}-{mode}-sittings.jsonl"), rd)
            scores = rd
            if with_exec and settled:
                scores = os.path.join(a.out, f"{name}-{mode}-scores.jsonl")
                merge_journals(os.path.join(rd, "journal.jsonl"),
                               os.path.join(a.out, name, "plain", "journal.jsonl"), settled, scores)
            ev = os.path.join(a.out, f"{name}-{mode}-eval.json")
            rc2, _ = run([a.dei, "eval", labelled, "--tasks", tasks_file, "--scores", scores,
                          "--bootstrap", "0", "--coverage", "all", "--json", ev], log)
            results[(name, mode)] = {"rank_rc": rc, "rank_seconds": round(secs, 1), "eval_rc": rc2,
                                     "eval": ev}
            print(name, mode, results[(name, mode)], flush=True)
    report(a.out, committees, results, modes)


def settled_issues(candidates):
    """Issues whose candidates all resolve them, or none do: any ranking scores the same there."""
    by = {}
    for c in candidates:
        by.setdefault(c["instance_id"], []).append(bool(c["resolved"]))
    return {i for i, r in by.items() if all(r) or not any(r)}


def merge_journals(exec_journal, plain_journal, settled, out):
    """The exec journal's issues, and the plain journal's lines for the settled issues."""
    with open(out, "w") as f:
        if os.path.exists(exec_journal):
            for line in open(exec_journal):
                f.write(line)
        for line in open(plain_journal):
            try:
                if json.loads(line).get("instance_id") in settled:
                    f.write(line)
            except ValueError:
                continue


def last_point(ev):
    d = json.load(open(ev))
    gaps = d["diversity"]["gaps"]
    point = d["curves"][0]["points"][-1]
    return {
        "k": point["k"],
        "n_at_k": point["n_at_k"],
        "average": point["average"],
        "union": point["union"],
        "best_single": gaps["best_single"],
        "best_single_rate": gaps["best_single_rate"],
        "instances": d["instances"],
        # n@K - best single, paired per instance, with its bootstrap interval when one was drawn
        "minus_best": (gaps.get("pick") or {}).get("minus_best"),
        # n@K and the best single member per basis of the pick (--exec rankings only)
        "by_basis": d.get("by_basis", []),
    }


def journal_results(run_dir):
    """A run directory's result per issue, from its journal (the last line per issue counts;
    none when it has no journal yet)."""
    out = {}
    journal = os.path.join(run_dir, "journal.jsonl")
    for line in open(journal) if os.path.exists(journal) else []:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d.get("result"), dict):
            out[d["instance_id"]] = d["result"]
    return out


def labels(labelled):
    """(instance_id, run) -> resolved, from a labelled candidates file."""
    out = {}
    for line in open(labelled):
        c = json.loads(line)
        out[(c["instance_id"], c["run"])] = bool(c.get("resolved"))
    return out


def exec_stats(run_dir):
    """What the sandbox runs of one run directory did, from its journal (last line per issue)."""
    issues = {i: r["exec"] for i, r in journal_results(run_dir).items() if "exec" in r}
    n = len(issues)
    ran = [e for e in issues.values() if not e.get("error")]
    cands = sum(1 for e in ran for b in e.get("behaviour", []) if b)
    fresh = sum(e["runs"] - e["cached_runs"] for e in ran)
    return {
        "issues": n,
        "environment_built": len(ran),
        "env_errors": sorted({(e["error"] or "").split("\n")[0][:120] for e in issues.values() if e.get("error")}),
        "with_tests": sum(1 for e in ran if e.get("stable_tests", 0) > 0),
        "with_reproduction": sum(1 for e in ran if e.get("reproduction")),
        "with_flaky_base_tests": sum(1 for e in ran if e.get("flaky_tests")),
        "with_written_tests": sum(1 for e in ran if e.get("written_tests")),
        # Time gates: files left out, run without their slowest tests, or tried whole and narrowed.
        "with_slow_files": sum(1 for e in ran if e.get("slow_files")),
        "with_trimmed_files": sum(1 for e in ran if e.get("trimmed_files")),
        "with_narrowed_files": sum(1 for e in ran if e.get("narrowed_files")),
        "split_into_classes": sum(1 for e in ran if e.get("classes", 0) >= 2),
        "candidates_run": cands,
        "sandbox_runs": sum(e["runs"] for e in ran),
        "fresh_runs": fresh,
        "sandbox_seconds": round(sum(e["run_seconds"] for e in ran), 1),
        "env_seconds": round(sum(e["env_seconds"] for e in ran), 1),
        "seconds_per_fresh_run": round(sum(e["run_seconds"] for e in ran) / fresh, 2) if fresh else None,
        "sandbox_seconds_per_candidate": round(sum(e["run_seconds"] for e in ran) / cands, 2) if cands else None,
    }


def summary(point, one_at_k):
    """A committee's row from the last point of a `dei eval`: instances, k, the 1@k figures
    given (name -> percent), Average@k, the best single member and Union@k."""
    return {
        "instances": point["instances"],
        "k": point["k"],
        **{name: round(v, 1) for name, v in one_at_k.items()},
        "average@k": round(point["average"], 1),
        "best single": f'{point["best_single_rate"]:.1f} ({point["best_single"]})',
        "union@k": round(point["union"], 1),
    }


def model_test_stats(run_dir):
    """What became of the model-written tests of one run directory (`--exec-llm-repro`), from its
    journal: issues that asked, kept at least one test (it prints `Issue reproduced` at the base
    commit), discarded every one, or got none written; how many candidates the kept tests say
    resolve the issue; and the calls, those answered from the cache, tokens and cost. An issue
    gathered again in an environment built at its base commit (pytest-7168, -7220) asks again;
    its record counts both calls (builds before the thirty-sixth session's fix kept the last
    one only: dei's own line in OUT/log.txt, `model-written tests: llm: N calls sent, …`,
    counts every call either way)."""
    out = {"asked": 0, "kept": 0, "discarded": 0, "not_written": 0, "shown_reproduction": 0,
           "shown_reproduction_kept": 0, "candidates_resolved": 0, "candidates_with_verdict": 0,
           "calls": 0, "cached": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    for r in journal_results(run_dir).values():
        e = r.get("exec") or {}
        samples = e.get("model_test_samples") or ([e["model_test"]] if e.get("model_test") else [])
        if not samples:
            continue
        out["asked"] += 1
        statuses = {m.get("status") for m in samples}
        kept = "kept" in statuses
        status = "kept" if kept else "discarded" if "discarded" in statuses else "not_written"
        out[status] += 1
        if any(m.get("shown_reproduction") for m in samples):
            out["shown_reproduction"] += 1
            out["shown_reproduction_kept"] += kept
        for m in samples:
            for k in ("calls", "cached", "input_tokens", "output_tokens", "cost_usd"):
                out[k] += (m.get("usage") or {}).get(k, 0)
        for b in e.get("behaviour", []):
            verdict = (b or {}).get("model_test")
            if verdict:
                out["candidates_with_verdict"] += 1
                out["candidates_resolved"] += verdict == "resolved"
    out["cost_usd"] = round(out["cost_usd"], 4)
    return out


def report(out, committees, results, modes=("plain", "exec")):
    rows = {}
    for name in committees:
        points = {m: last_point(os.path.join(out, f"{name}-{m}-eval.json")) for m in modes}
        plain = points["plain"]
        row = {
            **summary(plain, {f"1@k {m}": p["n_at_k"] for m, p in points.items()}),
            "rank seconds " + " / ".join(modes): tuple(
                results.get((name, m), {}).get("rank_seconds") for m in modes),
            # this sitting's seconds above; these add every sitting since the folder was made
            "exec wall time, every sitting": sittings(os.path.join(out, f"{name}-exec-sittings.jsonl")),
            "exec": exec_stats(os.path.join(out, name, "exec")),
        }
        if "exec-llm" in modes:
            row["exec-llm wall time, every sitting"] = sittings(
                os.path.join(out, f"{name}-exec-llm-sittings.jsonl"))
            row["model tests"] = model_test_stats(os.path.join(out, name, "exec-llm"))
        rows[name] = row
    print(json.dumps(rows, indent=1))
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
