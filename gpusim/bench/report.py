"""Reports of a comparison: the machine, a markdown table, a JSON file and a log-log plot.

Examples:
    >>> info = machine_info()
    >>> sorted(info)[:3]
    ['cpu', 'cpus', 'cuda']
    >>> fmt_rate(1_234_567.0), fmt_rate(12_345.0), fmt_rate(12.0)
    ('1.23 M', '12.3 k', '12')
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "machine_info",
    "describe_machine",
    "fmt_rate",
    "markdown_report",
    "write_json",
    "plot_results",
    "PEER_PACKAGES",
]

PEER_PACKAGES = (
    "tensordict",
    "torchrl",
    "gymnasium",
    "envpool",
    "vmas",
    "jax",
    "gymnax",
    "brax",
    "minatar",
    "triton",
    "matplotlib",
)
"""Packages whose installed versions a report records."""


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def available_cpus() -> int:
    """The CPUs this process may run on.

    Examples:
        >>> available_cpus() >= 1
        True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def machine_info() -> dict[str, Any]:
    """What the figures were measured on: CPU, GPUs, memory, OS and library versions.

    Examples:
        >>> machine_info()["torch"] == torch.__version__
        True
    """
    gpus = []
    if torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    mem = _memory_gib()
    return {
        "cpu": _cpu_model(),
        "cpus": available_cpus(),
        "memory_gib": None if mem is None else round(mem, 1),
        "gpus": gpus,
        "cuda": torch.version.cuda if torch.cuda.is_available() else None,
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gpusim": _version("gpusim") or "source tree",
        "packages": {name: _version(name) for name in PEER_PACKAGES},
    }


def describe_machine(info: dict[str, Any]) -> str:
    """One line naming the machine of :func:`machine_info`.

    Examples:
        >>> line = describe_machine({"cpu": "Xeon", "cpus": 2, "memory_gib": 23.4, "gpus": [], "torch": "2.13.0"})
        >>> line
        'Xeon, 2 CPUs, 23.4 GiB RAM, no GPU; torch 2.13.0'
    """
    gpu = ", ".join(info.get("gpus") or []) or "no GPU"
    mem = f", {info['memory_gib']} GiB RAM" if info.get("memory_gib") else ""
    return f"{info['cpu']}, {info['cpus']} CPUs{mem}, {gpu}; torch {info['torch']}"


def fmt_rate(x: float | None) -> str:
    """An env-steps/s figure in k/M/G.

    Examples:
        >>> fmt_rate(2.5e9), fmt_rate(None)
        ('2.50 G', '-')
    """
    if x is None:
        return "-"
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.2f} {unit}" if unit != "k" else f"{x / scale:.1f} {unit}"
    return f"{x:.0f}"


def _groups(rows: Sequence[dict]) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for r in rows:
        key = (r["env"], r["device"])
        if key not in seen:
            seen.append(key)
    return seen


def _labels(rows: Iterable[dict]) -> list[str]:
    out: list[str] = []
    for r in rows:
        if r["label"] not in out:
            out.append(r["label"])
    return out


def _device_type(device: str) -> str:
    # "jax:cpu" and "cpu" are both the CPU; "cuda:0" and "cuda" both CUDA
    return device.split(":")[-1] if device.startswith("jax:") else device.split(":")[0]


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " ---: |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def markdown_report(result: dict[str, Any]) -> str:
    """The comparison as markdown: per env and device, env-steps/s by batch and contender, the
    ratio of gpusim's faster mode to each peer, warm-up and compile seconds, then what was
    timed and what was skipped.

    Args:
        result: the dict :func:`gpusim.bench.compare.run_compare` returns (see its JSON).

    Examples:
        >>> row = dict(env="CartPole-v1", device="cpu", label="gpusim eager", contender="gpusim eager",
        ...            batch=4, steps=10, best=1e5, median=9e4, warmup_s=0.1, compile_s=None, ran_on="cpu")
        >>> result = dict(rows=[row], skipped=[], machine={"cpu": "x", "cpus": 1, "gpus": [], "torch": "2"},
        ...               config={"repeats": 1, "threads": 1}, created="now", what={})
        >>> "| 4 | 10 | 100.0 k |" in markdown_report(result)
        True
    """
    rows = result["rows"]
    cfg = result["config"]
    load = result.get("load_average") or {}
    load_note = ""
    if load.get("start") is not None:
        load_note = (
            f" Load average {load['start']:.2f} at the start, {load['end']:.2f} at the end "
            f"(on {result['machine']['cpus']} CPUs: more than that means other work shared the cores)."
        )
    lines = [
        f"Machine: {describe_machine(result['machine'])}. Threads: {cfg['threads']}. {result['created']}." + load_note,
        "",
        f"env-steps/s (batch x T / wall seconds), best of {cfg['repeats']} timed runs after one warm-up run; "
        "the contenders of a batch run the same T, in turns.",
    ]
    for env, device in _groups(rows):
        sub = [r for r in rows if r["env"] == env and r["device"] == device]
        labels = _labels(sub)
        batches = sorted({r["batch"] for r in sub})
        cell = {(r["batch"], r["label"]): r for r in sub}
        lines += ["", f"### {env} on {device}", ""]
        body = []
        for b in batches:
            steps = next(r["steps"] for r in sub if r["batch"] == b)
            body.append(
                [str(b), str(steps), *(fmt_rate(cell[b, lb]["best"]) if (b, lb) in cell else "-" for lb in labels)]
            )
        lines += _table(["batch", "T", *labels], body)
        mine = [lb for lb in labels if lb.startswith("gpusim")]
        peers = [lb for lb in labels if not lb.startswith("gpusim")]
        if mine and peers:
            lines += ["", "gpusim's faster mode / each peer (>1: gpusim is faster):", ""]
            body = []
            for b in batches:
                best_mine = max((cell[b, lb]["best"] for lb in mine if (b, lb) in cell), default=None)
                body.append(
                    [
                        str(b),
                        *(
                            f"{best_mine / cell[b, p]['best']:.2f}x" if best_mine and (b, p) in cell else "-"
                            for p in peers
                        ),
                    ]
                )
            lines += _table(["batch", *peers], body)
        lines += ["", "Seconds of the warm-up run (compilation included; compile alone in brackets):", ""]
        body = []
        for b in batches:
            cells = []
            for lb in labels:
                r = cell.get((b, lb))
                if r is None:
                    cells.append("-")
                else:
                    c = r.get("compile_s")
                    cells.append(f"{r['warmup_s']:.2f}" + (f" ({c:.2f})" if c else ""))
            body.append([str(b), *cells])
        lines += _table(["batch", *labels], body)
        where = sorted(
            {f"{r['label']}: {r['ran_on']}" for r in sub if _device_type(r["ran_on"]) != _device_type(device)}
        )
        if where:
            lines += ["", "Ran elsewhere: " + "; ".join(where) + "."]
    what = result.get("what") or {}
    if what:
        lines += ["", "What is timed:", ""] + [f"- {name}: {text}" for name, text in what.items()]
    if result["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- {s['line']}" for s in result["skipped"]]
    return "\n".join(lines) + "\n"


def write_json(result: dict[str, Any], path: str | os.PathLike) -> Path:
    """Writes ``result`` as indented JSON and returns the path.

    Examples:
        >>> import tempfile, json
        >>> p = write_json({"rows": []}, tempfile.mkdtemp() + "/r.json")
        >>> json.loads(p.read_text())
        {'rows': []}
    """
    path = Path(path)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path


def plot_results(result: dict[str, Any], path: str | os.PathLike) -> Path:
    """Plots env-steps/s against batch size, log-log, one line per contender and one panel per
    env and device, and saves a PNG.

    Raises:
        ImportError: if matplotlib is not installed (saying what to install).

    Examples:
        >>> import tempfile
        >>> row = dict(env="CartPole-v1", device="cpu", label="gpusim eager", batch=4, best=1e5)
        >>> result = dict(rows=[row], machine={"cpu": "x", "cpus": 1, "gpus": [], "torch": "2"}, created="now")
        >>> plot_results(result, tempfile.mkdtemp() + "/p.png").stat().st_size > 0  # doctest: +SKIP
        True
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError as err:
        raise ImportError("the plot needs matplotlib: pip install matplotlib (or gpusim[plot])") from err
    rows = result["rows"]
    groups = _groups(rows)
    n = max(1, len(groups))
    cols = min(n, 2)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(6.4 * cols, 4.6 * nrows), squeeze=False)
    for ax, (env, device) in zip(axes.flat, groups):
        sub = [r for r in rows if r["env"] == env and r["device"] == device]
        for label in _labels(sub):
            pts = sorted((r["batch"], r["best"]) for r in sub if r["label"] == label)
            mine = label.startswith("gpusim")
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker="o" if mine else "s",
                linestyle="-" if mine else "--",
                linewidth=2.2 if mine else 1.4,
                label=label,
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        batches = sorted({r["batch"] for r in sub})
        ax.set_xticks(batches, [f"{b:,}" for b in batches])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("batch size (envs)")
        ax.set_ylabel("env-steps/s")
        ax.set_title(f"{env} on {device}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    for ax in list(axes.flat)[len(groups) :]:
        ax.set_visible(False)
    load = result.get("load_average") or {}
    when = result["created"]
    if load.get("start") is not None:
        when += f", load average {load['start']:.1f} to {load['end']:.1f}"
    fig.suptitle(f"gpusim compare — {describe_machine(result['machine'])}\n{when}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
