#!/usr/bin/env python3
"""An agent's *agreement record* across a plain run, read as it would change the offline
committee's picks, from the rankings that `offline_committees.py` wrote (no ranking is redone).

Over a run of many issues, `--exec` trusts the agent whose runs most often fix without breaking
(the execution record). Without `--exec` the nearest evidence is agreement: an agent whose
patches other agents keep matching may be right more often on the next issue too. For each
issue, an agent's record is, over the run's *other* issues, the mean of its candidate's
agreement (the `agreement` part over its weight, `s/(1+s)`; 0 for a candidate scored by rule),
minus the mean over the agents seen on at least 3 of them; kind `any` counts the share of
issues where some other family makes a similar change instead. The record is added to the raw
score with a weight (`mean@2`: kind mean, weight 2), or only breaks ties at the top (`ties`).

  python3 crates/dei-bench/scripts/offline_record.py --out OUT [--build head] \
      [--split tune] [--committees all14,A,acr5,B,C,o1,...]

OUT is offline_committees.py's folder. Per variant: 1@k averaged over the committees, the paired
difference from the committee as ranked pooled over (committee, issue) with its 95% bootstrap
interval, the committees it moves up and down, and the picks it moves. Labels are read only to
score the picks.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from offline_ablation import committee_rankings, compared, credit, parse_args, pick, rescored, squash  # noqa: E402
from offline_committees import pair_labels  # noqa: E402

AGREEMENT_WEIGHT = 4.0  # the default `agreement` weight: the part over it is s/(1+s)
MIN_ISSUES = 3
VARIANTS = [("mean@1", "mean", 1.0), ("mean@2", "mean", 2.0), ("mean@4", "mean", 4.0),
            ("any@1", "any", 1.0), ("any@2", "any", 2.0), ("any@4", "any", 4.0),
            ("ties", "mean", None)]


def agreement(c):
    """A ranked candidate's agreement in [0, 1): 0 unless reviewed."""
    if c.get("status") != "reviewed":
        return 0.0
    parts = dict((n, v) for n, v in (c.get("review") or {}).get("score", {}).get("parts") or [])
    return parts.get("agreement", 0.0) / AGREEMENT_WEIGHT


def tally(outcome, kind):
    """Each agent's (sum, count) on one outcome: its candidate's agreement, or 1 when another
    family makes a similar change (kind `any`)."""
    out = {}
    for c in outcome["result"]["ranked"]:
        g = agreement(c)
        t = out.setdefault(c["agent"], [0.0, 0])
        t[0] += g if kind == "mean" else float(g > 0)
        t[1] += 1
    return out


def records(total, mine):
    """Each agent's record on an issue whose own tally is `mine`, from the run's `total`: its
    mean over the other issues minus the mean over the agents seen on at least MIN_ISSUES."""
    shares = {}
    for agent, (s, n) in total.items():
        ms, mn = mine.get(agent, (0.0, 0))
        if n - mn >= MIN_ISSUES:
            shares[agent] = (s - ms) / (n - mn)
    if not shares:
        return {}
    mean = sum(shares.values()) / len(shares)
    return {a: v - mean for a, v in shares.items()}


def with_record(ranked, scored, recs, weight):
    """The pick with the record added to each reviewed candidate's raw score (`scored`: the
    candidates as ranked, from `rescored`); with `weight` None the scores stay and the record
    breaks ties at the top only."""
    if weight is None:
        top = pick(scored)
        if len(top) < 2:
            return top
        best = max(recs.get(a, 0.0) for a in top)
        return sorted(a for a in top if recs.get(a, 0.0) == best)
    out = []
    for c, (agent, score, status) in zip(ranked, scored):
        parts = (c.get("review") or {}).get("score", {}).get("parts") or []
        if status == "reviewed" and parts:
            score = squash(sum(v for _, v in parts) + weight * recs.get(agent, 0.0))
        out.append((agent, score, status))
    return pick(out)


def main():
    a = parse_args()
    lab, _ = pair_labels(a.data)
    labels = ["(as ranked)"] + [v[0] for v in VARIANTS]
    table = {v: [] for v in labels}
    pairs = {v: [] for v in labels}
    moved = {v: 0 for v in labels}
    issues = 0
    kinds = sorted({kind for _, kind, _ in VARIANTS})
    for _, outcomes, rows in committee_rankings(a):
        # The record reads every issue the run ranked; the split only chooses the issues scored.
        tallies = {k: {o["instance_id"]: tally(o, k) for o in outcomes} for k in kinds}
        totals = {}
        for k in kinds:
            totals[k] = {}
            for t in tallies[k].values():
                for agent, (s, n) in t.items():
                    acc = totals[k].setdefault(agent, [0.0, 0])
                    acc[0] += s
                    acc[1] += n
        issues += len(rows)
        for o in rows:
            ranked = o["result"]["ranked"]
            scored = rescored(ranked)
            p0 = pick(scored)
            recs = {k: records(totals[k], tallies[k][o["instance_id"]]) for k in kinds}
            for label, kind, weight in [("(as ranked)", None, 0)] + VARIANTS:
                p = p0 if kind is None else with_record(ranked, scored, recs[kind], weight)
                moved[label] += p != p0
                pairs[label].append(credit(lab, o, p))
        for label in labels:
            k = len(rows)
            table[label].append(sum(pairs[label][-k:]) / k)
    base = table["(as ranked)"]
    if not base:
        sys.exit(f"no rankings of {a.committees or 'any committee'} under {a.out}/{a.build}")
    print(f"{len(base)} committees, {issues} (committee, issue) pairs, {a.split} half, build {a.build}")
    print(f"{'variant':<12} {'mean 1@k':>8} {'pooled change [95%]':>23} {'up':>3} {'down':>4} {'picks moved':>11}")
    for label in labels:
        mean, (m, lo, hi), up, down = compared(table[label], base, pairs[label], pairs["(as ranked)"])
        print(f"{label:<12} {mean:8.2f} {m:+7.2f} [{lo:+6.2f}, {hi:+6.2f}] {up:>3} {down:>4} {moved[label]:>11}")


if __name__ == "__main__":
    main()
