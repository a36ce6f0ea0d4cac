#!/usr/bin/env python3
"""An agent's execution record (dei's rank::run::record) at several weights, from exec_lite.py runs.

Over the issues the output folders ranked with --exec, each agent's record is its share of healthy
candidates (ran, broke no test that passed twice at base, did not break the reproduction, did not
leave it as at base while another candidate changed it, and did not fail every test set other
candidates wrote that another candidate passes) on the *other* issues, minus the mean
share over the agents seen on at least MIN_ISSUES of them. The score becomes the offline
committee's raw sum of parts plus `w * record`, squashed as dei squashes it; with the record's
ordering (dei's default, `exec_record_orders`; --no-order leaves it out) the candidates that ran
healthy on the issue rank first, by their agent's record (none: the mean; records within --noise
standard errors of the best among them count as the best, ½ as shipped), then by that score. The
top pick is re-read (ties as expected value) and scored with the labels. This is dei's health record
(`"exec_record_fixes": false` in `--offline-weights`; dei's default record counts only healthy runs
that change what the issue shows): at the shipped weight and with that option it gives the picks of
`dei rank --all --exec` over one run of the same issues.

  python3 crates/dei-bench/scripts/exec_prior.py --out OUT [OUT2 ...] [--weights 0,1,2,4,8]
      [--noise 0,0.5,1,1.5,2] [--record-over all|unsettled] [--committees all14,A,acr5,B,C]

Prints, per committee, weight and noise margin, right picks over the ranked issues of each half of
the shared split. They are chosen on the tune half (most right picks summed over the committees,
ties to the smallest); the report half is for reporting only. Run exec_lite.py without
--skip-settled so that records come from every issue; --record-over unsettled reads them from the
label-chosen issues only, to measure that sample's bias.
"""
import argparse
import collections
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exec_lite import half, journal_results, labels as read_labels  # noqa: E402


MIN_ISSUES = 3  # as dei's rank::run::record::MIN_ISSUES
RECORD_PART = "execution record of its agent"  # dei's part, dropped when a journal has it


def ran(b):
    """Whether anything ran for a candidate (dei's Behaviour::ran)."""
    return bool(b) and not b.get("error") and bool(
        b.get("tests_run") or b.get("repro") or b.get("model_test") or b.get("written"))


def healthy(c, ranked):
    """True or False for a candidate that ran, None when nothing ran for it
    (dei's rank::run::record::healthy)."""
    b = c.get("behaviour") or {}
    if not ran(b):
        return None
    if b.get("broken") or b.get("repro") == "broken":
        return False
    return not (left_as_base(c, ranked) or fails_written(c, ranked))


def left_as_base(c, ranked):
    """Whether a candidate leaves the reproduction as at base while another candidate changes it."""
    b = c.get("behaviour") or {}
    others_change = any(ran(o.get("behaviour")) and o["behaviour"].get("repro") == "changed"
                        for o in ranked if o is not c)
    return b.get("repro") in ("same", "still_fails") and others_change


def fails_written(c, ranked):
    """Whether a candidate fails every test set other candidates wrote (its own aside) that
    another candidate passes, and there is one (dei's rank::health::fails_written)."""
    b = c.get("behaviour") or {}
    passed = failed = 0
    for family, ok in (b.get("written") or {}).items():
        if b.get("wrote") == family:
            continue
        if ok:
            passed += 1
        elif any(o is not c and ran(o.get("behaviour"))
                 and (o["behaviour"].get("written") or {}).get(family) is True for o in ranked):
            failed += 1
    return failed > 0 and passed == 0


def tally(ranked):
    out = collections.defaultdict(lambda: [0, 0])
    for c in ranked:
        h = healthy(c, ranked)
        if h is not None:
            out[c["agent"]][0] += int(h)
            out[c["agent"]][1] += 1
    return out


class Prior(dict):
    """Each agent's record (share minus the mean), with the counts it rests on in `counts`
    (agent → (healthy, ran))."""
    counts = {}


def priors(results, iids):
    """Each agent's share of healthy candidates over `iids` minus the mean share over the
    agents seen on at least MIN_ISSUES of them."""
    total = collections.defaultdict(lambda: [0, 0])
    for i in iids:
        for a, (h, n) in tally(results[i]["ranked"]).items():
            total[a][0] += h
            total[a][1] += n
    out = Prior()
    out.counts = {a: (h, n) for a, (h, n) in total.items() if n >= MIN_ISSUES}
    share = {a: h / n for a, (h, n) in out.counts.items()}
    if not share:
        return out
    mean = sum(share.values()) / len(share)
    out.update({a: v - mean for a, v in share.items()})
    return out


NOISE_SE = 0.5  # as dei's rank::run::record::NOISE_SE


def within_noise(best, a, z=NOISE_SE):
    """dei's rank::run::record::within_noise over (healthy, ran) counts: `a`'s share is within
    `z` standard errors of `best`'s (0: only an equal share)."""
    pb, pa = best[0] / max(best[1], 1), a[0] / max(a[1], 1)
    var = lambda p, n: p * (1 - p) / max(n, 1)
    return pb - pa <= z * math.sqrt(var(pb, best[1]) + var(pa, a[1])) + 1e-12


def rescored(c, extra, scale=4.0):
    """The offline committee's score with `extra` added to its raw sum of parts, squashed as
    dei squashes it (1 + 9·σ(raw / scale), hundredths, within 1.01–10); a candidate scored by
    rule (no parts: an empty patch) keeps its score."""
    parts = ((c.get("review") or {}).get("score") or {}).get("parts") or []
    if not parts or c.get("score") is None:
        return c.get("score") or 0.0
    raw = sum(round(v * 1000) for n, v in parts if n != RECORD_PART) / 1000.0 + extra
    squashed = 1.0 + 9.0 / (1.0 + math.exp(-raw / scale))
    return min(max(round(squashed * 100) / 100, 1.01), 10.0)


def key(c, ranked, prior, w, order, best=None, z=NOISE_SE):
    """Where a candidate ranks (higher first): dei's rank::select::rank_in_tiers over the
    record pass's tiers; `best`: the agent with the best record among the issue's healthy
    candidates, whose tier every record within `z` standard errors of it shares."""
    score = rescored(c, w * prior.get(c["agent"], 0.0))
    if order and w != 0 and healthy(c, ranked):
        a = c["agent"]
        if a in prior and best is not None and within_noise(prior.counts[best], prior.counts[a], z):
            return (1, prior[best], score)
        return (1, prior.get(a, 0.0), score)
    return (0, 0.0, score)


def best_healthy(ranked, prior):
    """The agent with the best record among the candidates that ran healthy (None: none has one)."""
    agents = [c["agent"] for c in ranked if healthy(c, ranked) and c["agent"] in prior]
    return max(agents, key=lambda a: prior[a], default=None)


def right(results, labels, iid, prior, w, order=True, z=NOISE_SE):
    ranked = results[iid]["ranked"]
    if not ranked:
        return 0.0
    best = best_healthy(ranked, prior)
    scored = [(key(c, ranked, prior, w, order, best, z), c["agent"]) for c in ranked]
    top = max(s for s, _ in scored)
    tops = [a for s, a in scored if s == top]
    return sum(labels.get((iid, a), False) for a in tops) / len(tops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, nargs="+", help="exec_lite.py output folders (scored as one set)")
    ap.add_argument("--record-over", default="all", choices=["all", "unsettled"],
                    help="issues the records come from: every issue ranked with --exec, or only those "
                         "some but not all candidates resolve (a label-chosen sample, to measure its bias)")
    ap.add_argument("--committees", default="all14,A,acr5")
    ap.add_argument("--weights", default="0,1,2,4,8")
    ap.add_argument("--noise", default=str(NOISE_SE),
                    help="standard errors within which records count as the best (comma-separated)")
    ap.add_argument("--no-order", action="store_true",
                    help="the record only as a part of the score (exec_record_orders false)")
    a = ap.parse_args()
    weights = [(float(w), float(z)) for w in a.weights.split(",") for z in a.noise.split(",")]
    table = {}
    for name in a.committees.split(","):
        labels, results = {}, {}
        for out in a.out:
            labels.update(read_labels(os.path.join(out, f"{name}-labelled.jsonl")))
            results.update(journal_results(os.path.join(out, name, "exec")))
        iids = sorted(results)
        pool = iids
        if a.record_over == "unsettled":
            pool = [i for i in iids if 0 < sum(v for (j, _), v in labels.items() if j == i)
                    < sum(1 for (j, _) in labels if j == i)]
        loo = {i: priors(results, [j for j in pool if j != i]) for i in iids}
        for w in weights:
            for h in ("tune", "report"):
                ids = [i for i in iids if half(i) == h]
                got = sum(right(results, labels, i, loo[i], w[0], not a.no_order, w[1]) for i in ids)
                table[(name, w, h)] = (got, len(ids))
    tune_sum = {w: sum(table[(n, w, "tune")][0] for n in a.committees.split(",")) for w in weights}
    best = min(weights, key=lambda w: (-tune_sum[w], w))
    for name in a.committees.split(","):
        for w in weights:
            t, r = table[(name, w, "tune")], table[(name, w, "report")]
            print(f"{name:6} w={w[0]:g} noise={w[1]:g}  tune {t[0]:.2f}/{t[1]}  report {r[0]:.2f}/{r[1]}")
    print("tune-half sums:", {f"w={w[0]:g} noise={w[1]:g}": round(v, 2) for w, v in tune_sum.items()},
          "chosen:", best)


if __name__ == "__main__":
    main()
