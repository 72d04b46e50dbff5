"""Kendall's tau-b between the strategy ranking of human judgments and of synthetic sets, from
the `ckeep eval run --json` files bench/synth_validate.sh writes. Standard library only.

Usage: python3 bench/synth_validate.py RESULTS_DIR SET...
"""
import json
import os
import sys

# The generators bench/synth_validate.sh ran (BENCH_SYNTH_GENERATORS, same default).
GENERATORS = tuple(os.environ.get("BENCH_SYNTH_GENERATORS", "ict title").split())


def kendall_tau_b(xs, ys):
    """Tau-b (ties in either ranking corrected for), as scipy.stats.kendalltau computes it."""
    concordant = discordant = ties_x = ties_y = 0
    n = len(xs)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denom if denom else float("nan")


def means(path):
    with open(path) as f:
        run = json.load(f)
    metric = run["metrics"][0]
    return run["queries"], metric, {s["strategy"]: s["means"][metric] for s in run["strategies"]}


def main():
    out, sets = sys.argv[1], sys.argv[2:]
    print("| set | generator | queries | Kendall τ | recommended (synthetic best) | its human score "
          "| default's human score | best human score |")
    print("|---|---|---|---|---|---|---|---|")
    for name in sets:
        human_path = os.path.join(out, f"{name}-human.json")
        if not os.path.exists(human_path):
            continue
        _, metric, human = means(human_path)
        strategies = list(human)
        default = strategies[0]
        best = max(strategies, key=lambda s: human[s])
        for gen in GENERATORS:
            path = os.path.join(out, f"{name}-{gen}.json")
            if not os.path.exists(path):
                print(f"| {name} | {gen} | 0 | — | no set | | | |")
                continue
            if os.path.getmtime(path) < os.path.getmtime(human_path):
                # A synthetic run older than the human one may have used another grid.
                print(f"| {name} | {gen} | — | — | stale, rerun | | | |")
                continue
            queries, _, synth = means(path)
            # The synthetic set's winner: ties go to the earlier strategy, as `eval tune` does.
            recommended = max(strategies, key=lambda s: (synth[s], -strategies.index(s)))
            tau = kendall_tau_b([human[s] for s in strategies], [synth[s] for s in strategies])
            print(f"| {name} ({metric}) | {gen} | {queries} | {tau:.2f} | `{recommended}` "
                  f"| {human[recommended]:.4f} | {human[default]:.4f} | {human[best]:.4f} (`{best}`) |")


if __name__ == "__main__":
    main()
