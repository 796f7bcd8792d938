"""Before/after in one run: a benchmark script run alternately on two revisions of gpusim.

Each round runs the script once per revision (in turn, each in a fresh process, with that
revision's ``gpusim`` first on ``PYTHONPATH``) and reads the markdown table it prints. The peer
columns (TorchRL, gymnasium) run the same code in both revisions, so they show how much the
machine drifted between the runs; the summary gives, per revision, the median of every column over
the rounds, and the median of the per-round ratios.

Usage::

    python benchmarks/ab_revisions.py --before 926b36a [--after HEAD|WORKTREE] [--rounds 3] \\
        --python .venv-compare/bin/python -- benchmarks/bench_native.py --batches 65536

``--after WORKTREE`` (the default) uses the working tree as it is. The script is taken from this
tree for both revisions (the benchmark code is the same; only gpusim changes), or from
``--script-rev REV`` when the current script needs modules the older revision lacks.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _checkout(rev: str, tmp: Path) -> Path:
    if rev == "WORKTREE":
        return ROOT
    dest = tmp / rev.replace("/", "_")
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(dest), rev], check=True, capture_output=True
    )
    return dest


def _number(cell: str) -> float | None:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kMG]?)x?\s*", cell)
    if not m:
        return None
    scale = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    return float(m.group(1)) * scale


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in text.splitlines() if line.startswith("|")]
    if len(lines) < 3:
        raise RuntimeError(f"no markdown table in the benchmark output:\n{text}")
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    return header, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision of the 'before' gpusim")
    parser.add_argument("--after", default="WORKTREE", help="git revision, or WORKTREE (default)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="interpreter of the venv holding the peers")
    parser.add_argument(
        "--script-rev",
        default=None,
        help="take the benchmark script from this revision (default: this tree), e.g. when the "
        "current script imports modules the 'before' revision lacks",
    )
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- script.py [its arguments]")
    args = parser.parse_args()
    script = [a for a in args.script if a != "--"]
    if not script:
        parser.error("give the benchmark script after --")
    with tempfile.TemporaryDirectory(prefix="gpusim_ab_") as tmp:
        trees = {"before": _checkout(args.before, Path(tmp)), "after": _checkout(args.after, Path(tmp))}
        script_root = ROOT
        if args.script_rev is not None:
            (Path(tmp) / "script").mkdir()
            script_root = _checkout(args.script_rev, Path(tmp) / "script")
        results: dict[str, list] = {"before": [], "after": []}
        header = None
        try:
            for r in range(args.rounds):
                for name, tree in trees.items():
                    env = dict(os.environ, PYTHONPATH=str(tree))
                    cmd = [args.python, str(script_root / script[0]), *script[1:]]
                    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(tree))
                    if out.returncode != 0:
                        raise RuntimeError(f"{name} round {r} failed:\n{out.stderr[-3000:]}")
                    header, rows = _table(out.stdout)
                    results[name].append(rows)
                    print(f"round {r} {name} ({args.before if name == 'before' else args.after}):")
                    print("\n".join(line for line in out.stdout.splitlines() if line.startswith("|")), flush=True)
        finally:
            for tree in [*trees.values(), script_root]:
                if tree != ROOT:
                    subprocess.run(
                        ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True
                    )
    print()
    print(f"median over {args.rounds} rounds, revisions before={args.before} after={args.after}")
    print("| revision | " + " | ".join(header) + " |")
    print("|" + " ---: |" * (len(header) + 1))
    n_rows = len(results["before"][0])
    for i in range(n_rows):
        for name in ("before", "after"):
            cells = []
            for j, _ in enumerate(header):
                values = [_number(rows[i][j]) for rows in results[name]]
                if any(v is None for v in values):
                    cells.append(results[name][0][i][j])
                else:
                    cells.append(f"{statistics.median(values):.4g}")
            print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
