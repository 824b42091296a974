"""The noise of the 1x H200 A/A sessions (docs/validation/h200-run1), modelled: what it is made of, and what would cut it.

Needs numpy and scipy (an analysis of recorded data; rigaudit itself needs neither):
  python3 benchmarks/session_noise_model.py [--dir docs/validation/h200-run1] [--seed 1]

1. Variance components per level and metric (one-way ANOVA of the 8 sessions, log scale).
2. Time structure, per level, fitted by maximum likelihood to the runs' log tok/s over absolute time:
   RE (a session offset + white noise), drift (an Ornstein-Uhlenbeck process over time, correlation
   length l, + white), RE + drift. At c=1 also at the request level (requests.csv).
3. --spread-s, simulated: the repeats of a session spread S seconds apart. Under each fitted model,
   how often does a repeats-only compare (--session-cv 0) of two identical sessions call a change, and
   how large a session CV would a calibration find? Spreading helps only where the noise is a drift.
4. bench ab's paired noise per visit at R requests a visit (the H200 script's (c)), from the fits, and
   the chance that 8 cycles give an interval within ±10%.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from datetime import datetime
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.optimize import minimize

ROOT = Path(__file__).resolve().parents[1]


def sessions(folder: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(p.read_text()) for p in sorted(folder.glob("aa-*.json"))]


def components(data: list[dict]) -> list[str]:  # type: ignore[type-arg]
    lines = [
        "| metric | level | within SD | SD of session means | expected from within | between SD | F | p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for metric in ("output_tokens_per_s", "ttft_ms_p50", "itl_ms_p50"):
        for c in (1, 4):
            groups = [[math.log(r[metric]) for r in d["runs"] if r["concurrency"] == c] for d in data]
            k, n = len(groups), len(groups[0])
            means = [float(np.mean(g)) for g in groups]
            msw = float(np.mean([np.var(g, ddof=1) for g in groups]))
            msb = n * float(np.var(means, ddof=1))
            sb = math.sqrt(max(0.0, (msb - msw) / n))
            p = float(stats.f.sf(msb / msw, k - 1, k * (n - 1)))
            lines.append(
                f"| {metric} | {c} | {math.sqrt(msw):.3f} | {np.std(means, ddof=1):.3f} | {math.sqrt(msw / n):.3f} | "
                f"{sb:.3f} | {msb / msw:.2f} | {p:.4f} |"
            )
    return lines


def runs_in_time(data: list[dict], c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    t0 = datetime.fromisoformat(data[0]["started_at"])
    t, y, s = [], [], []
    for j, d in enumerate(data):
        start = (datetime.fromisoformat(d["started_at"]) - t0).total_seconds()
        for r in d["runs"]:
            if r["concurrency"] == c:
                t.append(start + r["started_s"])
                y.append(math.log(r["output_tokens_per_s"]))
                s.append(j)
    return np.array(t), np.array(y), np.array(s)


def _nll(cov: np.ndarray, y: np.ndarray) -> float:
    yc = y - y.mean()
    chol = np.linalg.cholesky(cov + 1e-10 * np.eye(len(y)))
    a = np.linalg.solve(chol, yc)
    return float(0.5 * a @ a + np.log(np.diag(chol)).sum())


MODELS = {
    "RE": (2, lambda p, dt, same, eye: p[0] ** 2 * same + p[1] ** 2 * eye),
    "drift": (3, lambda p, dt, same, eye: p[0] ** 2 * np.exp(-dt / p[1]) + p[2] ** 2 * eye),
    "RE + drift": (4, lambda p, dt, same, eye: p[0] ** 2 * same + p[1] ** 2 * np.exp(-dt / p[2]) + p[3] ** 2 * eye),
}


def fit(t: np.ndarray, y: np.ndarray, s: np.ndarray) -> dict[str, tuple[np.ndarray, float]]:
    dt = np.abs(t[:, None] - t[None, :])
    same = (s[:, None] == s[None, :]).astype(float)
    eye = np.eye(len(y))
    out = {}
    for name, (k, cov) in MODELS.items():
        best = None
        for length in (0.3, 1.0, 3.0, 10.0):
            x0 = np.log([0.05] * k)
            if name == "drift":
                x0[1] = math.log(length)
            if name == "RE + drift":
                x0[2] = math.log(length)
            res = minimize(lambda x: _nll(cov(np.exp(x), dt, same, eye), y), x0, method="Nelder-Mead", options={"maxiter": 6000})
            if best is None or res.fun < best.fun:
                best = res
        assert best is not None
        out[name] = (np.exp(best.x), 2 * best.fun + 2 * k)
    return out


def request_fit(folder: Path) -> tuple[float, float, float]:
    """(sigma, correlation length s, white) of an OU fit to log(latency per token) of the c=1 requests."""
    rows = [r for r in csv.DictReader((folder / "requests.csv").open()) if r["concurrency"] == "1"]
    t0 = {}
    for r in rows:
        t0.setdefault(r["session"], None)
    t = np.array([float(r["start_s"]) + float(r["latency_ms"]) / 2000 for r in rows])
    y = np.array([math.log(float(r["latency_ms"]) / float(r["output_tokens"])) for r in rows])
    dt, eye = np.abs(t[:, None] - t[None, :]), np.eye(len(y))
    best = None
    for length in (0.2, 0.5, 1.0, 3.0):
        x0 = np.log([0.1, length, 0.02])
        res = minimize(
            lambda x: _nll(np.exp(x[0]) ** 2 * np.exp(-dt / np.exp(x[1])) + np.exp(x[2]) ** 2 * eye, y), x0, method="Nelder-Mead"
        )
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    sd, length, white = np.exp(best.x)
    return float(sd), float(length), float(white)


def _welch_false(cov: np.ndarray, n: int, rng: np.random.Generator, draws: int = 20000) -> tuple[float, float]:
    """Two sessions of n repeats with this covariance: (how often Welch at 0.05 calls a change, the session CV
    an ANOVA of such sessions would find)."""
    chol = np.linalg.cholesky(cov + 1e-12 * np.eye(len(cov)))
    x = rng.standard_normal((draws, len(cov))) @ chol.T
    a, b = x[:, :n], x[:, n:]
    va, vb = a.var(axis=1, ddof=1) / n, b.var(axis=1, ddof=1) / n
    t = (b.mean(axis=1) - a.mean(axis=1)) / np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1))
    false = float(np.mean(2 * stats.t.sf(np.abs(t), df) < 0.05))
    within = float(np.mean((a.var(axis=1, ddof=1) + b.var(axis=1, ddof=1)) / 2))
    between = float(np.mean((b.mean(axis=1) - a.mean(axis=1)) ** 2) / 2) - within / n
    return false, math.sqrt(max(0.0, between))


def spread(params: dict[str, tuple[np.ndarray, float]], rng: np.random.Generator, run_s: float) -> list[str]:
    lines = [
        "| model | spread between a level's repeats (s) | session length (s) | false calls, repeats only | session CV left |"
    ]
    lines.append("|---|---|---|---|---|")
    n, apart = 5, 10.0  # sessions start 10 s after the previous one ended, as the H200 run's did
    for name in ("RE", "drift"):
        p = params[name][0]
        for gap in (0.0, 2.0, 5.0, 10.0, 20.0):
            step = 2 * run_s + gap  # the other level's run sits between two repeats of this one
            times = np.array([i * step for i in range(n)])
            t = np.concatenate([times, times + times[-1] + run_s + apart])
            dt = np.abs(t[:, None] - t[None, :])
            same = np.zeros((2 * n, 2 * n))
            same[:n, :n] = same[n:, n:] = 1.0
            cov = MODELS[name][1](p, dt, same, np.eye(2 * n))
            false, left = _welch_false(cov, n, rng)
            lines.append(f"| {name} | {gap:g} | {times[-1] + run_s:.0f} | {false:.1%} | {left:.1%} |")
    return lines


def ou_mean_sd(sd: float, length: float, duration: float) -> float:
    """SD of the time average over ``duration`` of an OU process (SD ``sd``, correlation length ``length``)."""
    x = duration / length
    return sd * math.sqrt(2.0 * (x - 1.0 + math.exp(-x)) / (x * x))


def ab_prediction(c4_within: float, c4_run_s: float, c1: tuple[float, float, float]) -> list[str]:
    lines = ["| level | requests a visit | visit s | per-visit SD | paired SD | 8 cycles: expected ±CI | P(CI within ±10%) |"]
    lines.append("|---|---|---|---|---|---|---|")
    target = math.log1p(0.10)
    q = stats.t.ppf(0.975, 7)
    rows = []
    for requests in (6, 16, 32):
        # c=4 (the server is GIL-bound: noise within a session about white): per-visit SD scales as 1/sqrt(duration)
        duration = c4_run_s * requests / 6  # the recorded runs: 6 requests in c4_run_s
        rows.append(("4", requests, duration, c4_within * math.sqrt(c4_run_s / duration)))
        duration1 = 0.075 * requests
        rows.append(("1", requests, duration1, ou_mean_sd(c1[0], c1[1], duration1)))
    for level, requests, duration, sd in sorted(rows):
        paired = math.sqrt(2.0) * sd
        half = q * paired / math.sqrt(8)
        chance = float(stats.chi2.cdf(7 * (target * math.sqrt(8) / (q * paired)) ** 2, 7))
        lines.append(
            f"| {level} | {requests} | {duration:.2f} | {sd:.1%} | {paired:.1%} | ±{math.expm1(half):.1%} | {chance:.0%} |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=ROOT / "docs" / "validation" / "h200-run1")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    data = sessions(args.dir)
    print(f"{len(data)} sessions from {args.dir}\n\n## Variance components (log scale)\n")
    print("\n".join(components(data)))
    fits = {}
    print("\n## Time structure of output tok/s (maximum likelihood; AIC: lower is better)\n")
    print("| level | model | parameters | AIC |\n|---|---|---|---|")
    names = {
        "RE": "session SD, white SD",
        "drift": "drift SD, length s, white SD",
        "RE + drift": "session SD, drift SD, length s, white SD",
    }
    for c in (1, 4):
        fits[c] = fit(*runs_in_time(data, c))
        for name, (p, aic) in fits[c].items():
            print(f"| {c} | {name} | {names[name]}: {', '.join(f'{v:.3f}' for v in p)} | {aic:.1f} |")
    c1 = request_fit(args.dir)
    print(f"\nc=1 requests (240): OU SD {c1[0]:.3f}, correlation length {c1[1]:.2f} s, white SD {c1[2]:.3f}")
    run_s = float(np.mean([r["duration_s"] for d in data for r in d["runs"] if r["concurrency"] == 4]))
    print(f"\n## --spread-s, simulated at c=4 (runs of {run_s:.2f} s; two identical sessions, 5 repeats each)\n")
    print("\n".join(spread(fits[4], rng, run_s)))
    within = math.sqrt(
        float(
            np.mean(
                [np.var([math.log(r["output_tokens_per_s"]) for r in d["runs"] if r["concurrency"] == 4], ddof=1) for d in data]
            )
        )
    )
    print("\n## bench ab, 8 cycles: paired noise per visit (from the fits)\n")
    print("\n".join(ab_prediction(within, run_s, c1)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
