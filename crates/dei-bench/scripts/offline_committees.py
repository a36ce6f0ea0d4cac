#!/usr/bin/env python3
"""The plain offline committee (`dei rank --all`, no `--exec`, no labels in the ranking) on
committees of published SWE-bench Lite runs, old (2024, `lite_candidates.jsonl`) and new
(2025-2026, `lite_candidates_more.jsonl`), over the Lite instances whose repository is under
--repos, per half of the shared split.

  python3 crates/dei-bench/scripts/offline_committees.py --dei NAME=target/release/dei \
      [--dei OTHER=path/to/other/dei] --data ../shared/data --repos DIR --out OUT \
      [--committees all14,A,acr5,B,C,strong5,strong5+trevec,strong5+2,new3,new3+2] [--draw 24] [--draw-new 12]

For each committee and each build: its members' candidates without their labels are ranked by
`dei rank --all` into OUT/BUILD/NAME, then read against the labels here: per instance the pick's
credit (ties at the top as expected value, c of t), Average@k (the members' mean), and the best
member (the member with the highest rate on the instances read). A run that covers only some
instances by design (the `__verified_subset` runs, graded on the 93 Lite instances also in
Verified) makes its committee scored over the instances it covers, and the report says how
many; an instance missing from any other run is one it submitted nothing for. Paired differences (1@k minus
Average@k, minus the best member; build minus build) come with 95% bootstrap intervals over
instances (1000 resamples, seed 7).

--draw N draws N committees o1..oN of the 13 old runs that cover every instance; --draw-new N
draws N committees m1..mN mixing old and new runs (at least one of each), both of 3, 4, 5 and 6
runs in turn, by SHA-256 of "SEED:NAME:run" (run names only, never a label).

With --exec every build also ranks with `dei rank --all --exec` (build NAME+exec), from one
sandbox cache (--exec-cache, default OUT/exec-cache) that every committee, build and variant
shares, so a candidate runs once however many committees hold it. Every issue of the half is
ranked, as a user's run would be: the execution record (how often an agent's runs fix what
an issue shows without breaking anything, over the run's other issues) reads them all.
--skip-settled ranks with --exec only the issues where some but not all of the committee's
candidates resolve, crediting the others Average@k (every pick scores the same there): much
cheaper, but the labels then choose the issues the record reads, so it is a quick look, never a
reported figure. Each --exec-weights LABEL=FILE adds a variant NAME+exec-LABEL ranked with
`--offline-weights FILE` from the same cache (an ablation: one evidence kind's weight set to 0).
--halves tune|report restricts every ranking to one half of the split.

Reruns reuse the run directories (dei resumes), so a second build or a new committee costs only
its own rankings. The tables go to stdout and OUT/report.json.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ANSWERS = ("patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS", "hints_text")
STRONG5 = [
    "JoyCode__verified_subset",
    "OpenHands_GPT-5__verified_subset",
    "TRAE__verified_subset",
    "Lingxi-v1.5_claude-4-sonnet-20250514__verified_subset",
    "Refact.ai_Agent__verified_subset",
]
NEW3 = ["trevec_v6_claude-sonnet-4-6", "trevec_v5_claude-sonnet-4-6", "20240402_sweagent_gpt4"]
# Two strong 2024 runs that join newer committees.
PAIR2024 = ["20241117_moatless_claude-3.5-sonnet-20241022", "20240604_CodeR"]
NAMED = {
    "all14": {"old": None},
    "A": ["20240623_moatless_claude35sonnet", "20240604_CodeR", "acr-v20240408_acr-run-3",
          "sweagent-gpt4-0125_cost_2_2"],
    "acr5": ["acr-v20240408_acr-run-1", "acr-v20240408_acr-run-2", "acr-v20240408_acr-run-3",
             "acr-v20240408_acr-val-only", "acr-v20240408_acr-val-sbfl"],
    "B": ["20240609_moatless_gpt4o", "20240617_moatless_gpt4o",
          "20241117_moatless_claude-3.5-sonnet-20241022", "sweagent-gpt4-0125_cost_2_1",
          "sweagent-gpt4-0125_cost_2_3"],
    "C": {"old_without": ["20241117_moatless_claude-3.5-sonnet-20241022"]},
    "strong5": STRONG5,
    "new3": NEW3,
    "new3+2": NEW3 + PAIR2024,
    # The strong five joined by weaker agents: two 2026 runs, or the 2024 pair.
    "strong5+trevec": STRONG5 + NEW3[:2],
    "strong5+2": STRONG5 + PAIR2024,
}


def half(instance_id):
    """The shared split (dei_bench::split): tune when the first byte of SHA-256 is even."""
    return "tune" if hashlib.sha256(instance_id.encode()).digest()[0] % 2 == 0 else "report"


def draw(runs, name, size, seed):
    return sorted(sorted(runs, key=lambda r: hashlib.sha256(f"{seed}:{name}:{r}".encode()).hexdigest())[:size])


def members_of(spec, old_runs, old_all):
    if isinstance(spec, list):
        return spec
    if "old" in spec:
        return sorted(old_all)
    return sorted(r for r in old_all if r not in spec["old_without"])


def bootstrap(diffs, resamples=1000, seed=7):
    """Mean of per-instance differences and its 95% percentile interval."""
    n = len(diffs)
    if n == 0:
        return (0.0, 0.0, 0.0)
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return (sum(diffs) / n, means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])


def best_member(per, k, sp):
    """A committee's instances in half `sp`, its k members' resolve rates there, and the
    member with the highest (the first of equals); `per[i][2]` holds instance i's labels."""
    iids = [i for i in per if sp == "all" or half(i) == sp]
    if not iids:
        return iids, [], None
    rates = [sum(per[i][2][m] for i in iids) / len(iids) for m in range(k)]
    return iids, rates, max(range(k), key=lambda m: rates[m])


def credits(per, k, sp):
    """`best_member`'s instances, rates and best member, with each instance's credit for the
    pick, for Average@k and for the best member (paired, in the instances' order)."""
    iids, rates, best_k = best_member(per, k, sp)
    pick = [per[i][0] for i in iids]
    avg = [per[i][1] for i in iids]
    best = [float(per[i][2][best_k]) for i in iids] if iids else []
    return iids, rates, best_k, pick, avg, best


def last_lines(journal):
    last = {}
    with open(journal) as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            last[o["instance_id"]] = o
    return last


RUN_FILES = ("lite_candidates.jsonl", "lite_candidates_more.jsonl")


def candidate_rows(data):
    """Every candidate of both run files, each marked `_old` when from the 2024 file."""
    rows = []
    for name in RUN_FILES:
        with open(os.path.join(data, name)) as f:
            for line in f:
                c = json.loads(line)
                c["_old"] = name == RUN_FILES[0]
                rows.append(c)
    return rows


def pair_labels(data):
    """`{(instance_id, run): resolved}` over both run files, and the set of 2024 runs."""
    rows = candidate_rows(data)
    return ({(c["instance_id"], c["run"]): bool(c.get("resolved")) for c in rows},
            {c["run"] for c in rows if c["_old"]})


def pick_credit(outcome, labels):
    """Tie-aware credit of the pick: resolved share among the candidates ranked first."""
    if outcome is None or outcome.get("error_kind"):
        return None
    top = outcome.get("top") or []
    if not top:
        return 0.0
    return sum(1 for a in top if labels.get(a, False)) / len(top)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dei", action="append", required=True, help="NAME=BINARY (repeatable)")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--repos", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--committees", default="all14,A,acr5,B,C,strong5,strong5+trevec,strong5+2,new3,new3+2")
    ap.add_argument("--draw", type=int, default=0)
    ap.add_argument("--draw-new", type=int, default=0)
    ap.add_argument("--draw-seed", default="dei-committees")
    ap.add_argument("--split", default="report,tune,all", help="the halves the report shows")
    ap.add_argument("--halves", default="all", choices=["all", "tune", "report"],
                    help="rank the instances of this half only")
    ap.add_argument("--exec", action="store_true", help="also rank with --exec (build NAME+exec)")
    ap.add_argument("--exec-weights", action="append", default=[], metavar="LABEL=FILE",
                    help="with --exec, a variant NAME+exec-LABEL ranked with --offline-weights FILE")
    ap.add_argument("--skip-settled", action="store_true",
                    help="with --exec, rank only issues some but not all candidates resolve (a quick look)")
    ap.add_argument("--exec-cache", default=None)
    ap.add_argument("--exec-jobs", default="1")
    ap.add_argument("--exec-timeout", default="120")
    a = ap.parse_args()
    builds = []
    for b in a.dei:
        bname, binary = b.split("=", 1)
        builds.append((bname, binary, None))
        if a.exec:
            builds.append((bname + "+exec", binary, ""))
            for v in a.exec_weights:
                label, path = v.split("=", 1)
                builds.append((f"{bname}+exec-{label}", binary, os.path.abspath(path)))
    exec_cache = a.exec_cache or os.path.join(a.out, "exec-cache")
    os.makedirs(a.out, exist_ok=True)
    have = set(os.listdir(a.repos))
    have_names = {h.replace("+", "__") for h in have}

    tasks = []
    for line in open(os.path.join(a.data, "swebench_lite/test.jsonl")):
        t = json.loads(line)
        if t["repo"].replace("/", "__") not in have_names:
            continue
        if a.halves != "all" and half(t["instance_id"]) != a.halves:
            continue
        for k in ANSWERS:
            t.pop(k, None)
        tasks.append(t)
    assert tasks and not any(k in t for t in tasks for k in ANSWERS)
    ids = {t["instance_id"] for t in tasks}
    tasks_file = os.path.join(a.out, "tasks.jsonl")
    with open(tasks_file, "w") as f:
        for t in tasks:
            f.write(json.dumps(t) + "\n")

    rows = candidate_rows(a.data)
    old_all = sorted({c["run"] for c in rows if c["_old"]})
    # drawn committees take the 13 old runs that cover every instance (devin's 38-instance
    # subset left out), as exec_lite.py draws them
    old_runs = [r for r in old_all if r != "devin_20240312_subset"]
    new_full = sorted(NEW3)
    all_runs = sorted({c["run"] for c in rows})
    labels = {}
    covers = {}
    for c in rows:
        labels.setdefault(c["instance_id"], {})[c["run"]] = bool(c.get("resolved"))
        covers.setdefault(c["run"], set()).add(c["instance_id"])

    committees = {}
    for n in [x for x in a.committees.split(",") if x]:
        committees[n] = members_of(NAMED[n], old_runs, old_all)
    for i in range(1, a.draw + 1):
        committees[f"o{i}"] = draw(old_runs, f"o{i}", 3 + (i - 1) % 4, a.draw_seed)
    for i in range(1, a.draw_new + 1):
        size = 3 + (i - 1) % 4
        n_new = 1 + (i - 1) % min(len(new_full), size - 1)
        committees[f"m{i}"] = sorted(draw(new_full, f"m{i}", n_new, a.draw_seed)
                                     + draw(old_runs, f"m{i}", size - n_new, a.draw_seed))
    with open(os.path.join(a.out, "committees.json"), "w") as f:
        json.dump(committees, f, indent=1)

    results = {}
    for cname, members in committees.items():
        # A run graded on part of the benchmark only (the `__verified_subset` runs: the Lite
        # instances also in Verified, SOURCES.md) scores its committee over the instances it
        # covers; an instance missing from any other run is one it submitted nothing for (no
        # candidate), as the harness counts it.
        inst = set(ids)
        for m in members:
            if m.endswith("__verified_subset"):
                inst &= covers[m]
        blind = os.path.join(a.out, f"{cname}-candidates.jsonl")
        with open(blind, "w") as f:
            for c in rows:
                if c["run"] in members and c["instance_id"] in inst:
                    f.write(json.dumps({"instance_id": c["instance_id"], "run": c["run"],
                                        "model_patch": c["model_patch"]}) + "\n")
        settled = {i for i in inst
                   if a.skip_settled and len({labels.get(i, {}).get(m, False) for m in members}) == 1}
        exec_blind = os.path.join(a.out, f"{cname}-exec-candidates.jsonl")
        if a.exec:
            with open(blind) as f, open(exec_blind, "w") as g:
                for line in f:
                    if json.loads(line)["instance_id"] not in settled:
                        g.write(line)
        for bname, binary, weights in builds:
            with_exec = weights is not None
            mine = exec_blind if with_exec else blind
            digest = hashlib.sha256(open(mine, "rb").read()).hexdigest()
            rd = os.path.join(a.out, bname, cname)
            manifest = os.path.join(rd, "run.json")
            if os.path.exists(manifest) and json.load(open(manifest)).get("candidates_sha256") != [digest]:
                # ranked from other candidates (the committee was redefined): rank it again
                shutil.rmtree(rd)
            cmd = [binary, "rank", mine, "--tasks", tasks_file, "--all", "--repos", a.repos,
                   "--run-dir", rd, "--no-progress"]
            if with_exec:
                cmd += ["--exec", "--exec-cache", exec_cache, "--exec-jobs", a.exec_jobs,
                        "--exec-timeout", a.exec_timeout]
                if weights:
                    cmd += ["--offline-weights", weights]
            if with_exec and not any(i not in settled for i in inst):
                rc = 0  # every issue is settled: nothing to rank with --exec
                os.makedirs(rd, exist_ok=True)
                open(os.path.join(rd, "journal.jsonl"), "a").close()
            else:
                with open(os.path.join(a.out, "log.txt"), "a") as log:
                    log.write("$ " + " ".join(cmd) + "\n")
                    log.flush()
                    started = time.time()
                    rc = subprocess.call(cmd, stdout=log, stderr=log)
                    log.write(f"# {bname} {cname}: rc {rc}, {time.time() - started:.0f} s\n")
            if rc not in (0, 1):
                # 1: some issue not ranked (counted here as a random pick); anything else, such as
                # a run directory of other inputs, leaves no ranking to read
                sys.exit(f"{bname} {cname}: dei rank exited {rc}; see {os.path.join(a.out, 'log.txt')}")
            last = last_lines(os.path.join(rd, "journal.jsonl"))
            per = {}
            for iid in sorted(inst):
                lab = [labels.get(iid, {}).get(m, False) for m in members]
                avg = sum(lab) / len(lab)
                if with_exec and iid in settled:
                    per[iid] = (avg, avg, lab, None, None)  # every pick scores the same here
                    continue
                credit = pick_credit(last.get(iid), labels.get(iid, {}))
                # an issue not ranked counts as a random pick among the members
                top = tuple(sorted((last.get(iid) or {}).get("top") or []))
                basis = ((last.get(iid) or {}).get("result") or {}).get("pick_basis")
                per[iid] = (avg if credit is None else credit, avg, lab, top, basis)
            results[(cname, bname)] = per

    splits = [s for s in a.split.split(",") if s]
    report = {"committees": committees, "tables": {}}
    for sp in splits:
        print(f"\n== {sp} half" if sp != "all" else "\n== all instances")
        head = f"{'committee':<9} {'n':>4} {'runs':>4}  " + "  ".join(
            f"{b:>8} {'−avg [95%]':>21} {'−best [95%]':>21}" for b, _, _ in builds)
        head += f"  {'avg':>5} {'best':>5} {'union':>5}"
        print(head)
        for cname, members in committees.items():
            line = None
            cells = []
            for bname, _, _ in builds:
                per = results[(cname, bname)]
                iids, rates, best_k, pick, avg, best = credits(per, len(members), sp)
                if not iids:
                    continue
                union = sum(1 for i in iids if any(per[i][2])) / len(iids)
                d_avg = bootstrap([p - q for p, q in zip(pick, avg)])
                d_best = bootstrap([p - q for p, q in zip(pick, best)])
                one = 100 * sum(pick) / len(iids)
                cells.append(f"{one:8.1f} {100*d_avg[0]:+6.1f} [{100*d_avg[1]:+5.1f},{100*d_avg[2]:+5.1f}] "
                             f"{100*d_best[0]:+6.1f} [{100*d_best[1]:+5.1f},{100*d_best[2]:+5.1f}]")
                line = (len(iids), 100 * sum(avg) / len(iids), 100 * rates[best_k], 100 * union)
                report["tables"].setdefault(sp, {}).setdefault(cname, {})[bname] = {
                    "instances": len(iids), "one_at_k": one,
                    "minus_average": [100 * x for x in d_avg], "minus_best": [100 * x for x in d_best],
                    "average": line[1], "best_member": line[2], "best_member_name": members[best_k],
                    "union": line[3]}
            if line:
                print(f"{cname:<9} {line[0]:>4} {len(members):>4}  " + "  ".join(cells)
                      + f"  {line[1]:5.1f} {line[2]:5.1f} {line[3]:5.1f}")
        # the drawn committees of each kind as one group: the mean, how many fall below their
        # Average@k or rise above their best member, and the paired differences pooled over
        # committee × instance
        groups = {"drawn from 2024 runs": r"o\d+", "drawn across generations": r"m\d+"}
        for gname, pat in groups.items():
            names = [c for c in committees if re.fullmatch(pat, c)]
            if len(names) < 2:
                continue
            for bname, _, _ in builds:
                ones, below, above, d_avg, d_best = [], 0, 0, [], []
                for cname in names:
                    iids, _, _, pick, avg, best = credits(
                        results[(cname, bname)], len(committees[cname]), sp)
                    if not iids:
                        continue
                    ones.append(100 * sum(pick) / len(iids))
                    below += sum(pick) < sum(avg) - 1e-9
                    above += sum(pick) > sum(best) + 1e-9
                    d_avg += [p - q for p, q in zip(pick, avg)]
                    d_best += [p - q for p, q in zip(pick, best)]
                if not ones:
                    continue
                ma, mb = bootstrap(d_avg), bootstrap(d_best)
                print(f"{bname}, {len(ones)} committees {gname}: mean 1@k {sum(ones)/len(ones):.2f}; "
                      f"− Average@k {100*ma[0]:+.2f} [{100*ma[1]:+.2f}, {100*ma[2]:+.2f}] (below on {below}); "
                      f"− best member {100*mb[0]:+.2f} [{100*mb[1]:+.2f}, {100*mb[2]:+.2f}] (above on {above}); "
                      f"pooled over committee × instance")
                report.setdefault("groups", {}).setdefault(sp, {}).setdefault(gname, {})[bname] = {
                    "committees": len(ones), "mean_one_at_k": sum(ones) / len(ones),
                    "minus_average": [100 * x for x in ma], "below_average": below,
                    "minus_best": [100 * x for x in mb], "above_best": above}
        # each build against the first; each --exec-weights variant against its build's +exec
        pairs = [(builds[0][0], b[0]) for b in builds[1:] if b[2] is None or b[2] == ""]
        pairs += [(b[0].split("+exec-")[0] + "+exec", b[0]) for b in builds if b[2]]
        for b0, b1 in pairs:
            diffs, moved = [], 0
            for cname in committees:
                p0, p1 = results[(cname, b0)], results[(cname, b1)]
                iids = [i for i in p0 if sp == "all" or half(i) == sp]
                diffs += [p1[i][0] - p0[i][0] for i in iids]
                moved += sum(1 for i in iids if p0[i][3] is not None and p0[i][3] != p1[i][3])
            m = bootstrap(diffs)
            print(f"{b1} − {b0}, pooled over committees and instances: {100*m[0]:+.2f} "
                  f"[{100*m[1]:+.2f}, {100*m[2]:+.2f}]; picks moved {moved}")
            report.setdefault("pairs", {}).setdefault(sp, {})[f"{b1} - {b0}"] = {
                "pooled": [100 * x for x in m], "picks_moved": moved}
        # what --exec picks rest on (`pick_basis`), over every committee: how often each kind
        # of pick is right, beside the committee's best member on the same issues; "(no basis)":
        # an issue not ranked, or one whose candidates were all scored by rule (none reviewed)
        for bname, _, weights in builds:
            if weights != "":
                continue
            tally = {}
            for cname, members in committees.items():
                per = results[(cname, bname)]
                iids, _, _, pick, _, best = credits(per, len(members), sp)
                for i, p, b in zip(iids, pick, best):
                    t = tally.setdefault(per[i][4] or "(no basis)", [0, 0.0, 0.0])
                    t[0] += 1
                    t[1] += p
                    t[2] += b
            if tally:
                print(f"{bname}: picks by basis, right / best member on the same issues: " + "; ".join(
                    f"{b} {t[0]}: {100*t[1]/t[0]:.1f} / {100*t[2]/t[0]:.1f}" for b, t in sorted(tally.items())))
                report.setdefault("basis", {}).setdefault(sp, {})[bname] = {
                    b: {"picks": t[0], "right": 100 * t[1] / t[0], "best_member": 100 * t[2] / t[0]}
                    for b, t in tally.items()}
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
