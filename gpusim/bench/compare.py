"""``gpusim compare``: gpusim eager and compiled against every installed peer, in one run.

For every env, device and batch size, each contender is built and warmed up once (the first
run: compilation, allocation), then timed ``repeats`` times in turns with the other contenders,
all running the same number of steps. Peers that are not installed, or that have no counterpart
of an env, are skipped with one line each. :func:`run_compare` returns a JSON-ready dict;
:func:`write_reports` writes ``compare.md``, ``compare.json`` and ``compare.png``.

Examples:
    >>> cfg = CompareConfig(batches=(4,), steps=5, repeats=1, gpusim=("eager",), peers=())
    >>> result = run_compare(cfg, log=lambda line: None)
    >>> [(r["label"], r["batch"], r["steps"]) for r in result["rows"]]
    [('gpusim eager', 4, 5)]
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import gc
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from gpusim.bench.contenders import GPUSIM_COMPILED, GPUSIM_EAGER, BenchOptions, Contender
from gpusim.bench.envs import check_transform_names, parse_env_id
from gpusim.bench.peers import PEERS
from gpusim.bench.progress import Progress
from gpusim.bench.report import available_cpus, machine_info, markdown_report, plot_results, write_json
from gpusim.bench.timing import Measurement, Runner, measure, steps_for

__all__ = [
    "CompareConfig",
    "run_compare",
    "write_reports",
    "default_device",
    "check_device",
    "busy_warning",
    "PEER_NAMES",
    "quick_config",
]

PEER_NAMES = tuple(p.peer for p in PEERS)
"""The names ``--peers`` accepts."""

GPUSIM_MODES = {"eager": GPUSIM_EAGER, "compiled": GPUSIM_COMPILED}


def default_device() -> str:
    """``"cuda"`` when CUDA is available, else ``"cpu"``.

    Examples:
        >>> default_device() in ("cpu", "cuda")
        True
    """
    return "cuda" if torch.cuda.is_available() else "cpu"


def check_device(device: str) -> str:
    """Checks that ``device`` names a device this machine has; returns it.

    Raises:
        ValueError: naming the device when torch cannot parse it, or CUDA is asked for and not
            available.

    Examples:
        >>> check_device("cpu")
        'cpu'
        >>> check_device("gpu0")
        Traceback (most recent call last):
        ...
        ValueError: invalid device 'gpu0' (expected e.g. cpu, cuda, cuda:1)
    """
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"invalid device {device!r} (expected e.g. cpu, cuda, cuda:1)") from err
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but CUDA is not available on this machine")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
    elif dev.type != "cpu":
        raise ValueError(f"device {device!r}: only cpu and cuda devices are benchmarked")
    return device


@dataclasses.dataclass(frozen=True)
class CompareConfig:
    """What ``gpusim compare`` measures.

    Args:
        envs: env ids (see :mod:`gpusim.bench.envs`).
        batches: batch sizes.
        devices: devices for gpusim and the torch peers (host-only peers run on the CPU).
        peers: peer names (:data:`PEER_NAMES`).
        gpusim: gpusim modes, ``"eager"`` and/or ``"compiled"``.
        steps: steps per run (``None``: :func:`~gpusim.bench.timing.steps_for` of ``seconds``).
        seconds: target seconds per run when ``steps`` is ``None``.
        repeats: timed runs per contender.
        threads: torch threads, and EnvPool's (``None``: the CPUs available).
        seed: every env's seed.
        transforms: transform presets for gpusim and TorchRL (other peers are skipped).
        compile_options: keyword arguments of ``env.compile``.

    Raises:
        ValueError: naming the bad field and value.

    Examples:
        >>> CompareConfig(batches=(0,))
        Traceback (most recent call last):
        ...
        ValueError: batches must be positive ints, got (0,)
    """

    envs: tuple[str, ...] = ("CartPole-v1",)
    batches: tuple[int, ...] = (1, 16, 256, 4096, 65536)
    devices: tuple[str, ...] = dataclasses.field(default_factory=lambda: (default_device(),))
    peers: tuple[str, ...] = PEER_NAMES
    gpusim: tuple[str, ...] = ("eager", "compiled")
    steps: int | None = None
    seconds: float = 0.5
    repeats: int = 3
    threads: int | None = None
    seed: int = 0
    transforms: tuple[str, ...] = ()
    compile_options: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        def bad(name: str, expected: str) -> ValueError:
            return ValueError(f"{name} must be {expected}, got {getattr(self, name)!r}")

        if not self.envs:
            raise bad("envs", "at least one env id")
        for env_id in self.envs:
            parse_env_id(env_id)
        if not self.batches or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in self.batches):
            raise bad("batches", "positive ints")
        if not self.devices:
            raise bad("devices", "at least one device")
        for device in self.devices:
            check_device(device)
        unknown = [p for p in self.peers if p not in PEER_NAMES]
        if unknown:
            raise ValueError(f"unknown peer(s) {unknown}; known peers: {list(PEER_NAMES)}")
        if not self.gpusim or any(m not in GPUSIM_MODES for m in self.gpusim):
            raise bad("gpusim", f"modes among {list(GPUSIM_MODES)}")
        if self.steps is not None and (
            isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1
        ):
            raise bad("steps", "a positive int or None")
        if not self.seconds > 0:
            raise bad("seconds", "> 0")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise bad("repeats", "a positive int")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise bad("threads", "a positive int or None")
        check_transform_names(self.transforms)

    def contenders(self) -> list[Contender]:
        """gpusim's modes, then the peers, in column order.

        Examples:
            >>> cfg = CompareConfig(gpusim=("eager",), peers=("gymnasium",))
            >>> [c.name for c in cfg.contenders()]
            ['gpusim eager', 'gymnasium']
        """
        return [GPUSIM_MODES[m] for m in self.gpusim] + [p for p in PEERS if p.peer in self.peers]

    def as_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (threads resolved).

        Examples:
            >>> import json
            >>> data = CompareConfig(batches=(4, 8), peers=()).as_dict()
            >>> data["batches"], data["threads"] >= 1
            ((4, 8), True)
            >>> json.loads(json.dumps(data))["batches"]
            [4, 8]
        """
        out = dataclasses.asdict(self)
        out["threads"] = self.threads or available_cpus()
        return out


def quick_config(**overrides: Any) -> CompareConfig:
    """The ``--quick`` sweep: CartPole-v1 at 16, 1024 and 16384 envs, short runs, two repeats,
    one thread for every contender, compiled rollouts one step per compiled call (compiles in
    seconds instead of minutes at small batch on a CPU).

    One thread, because on a shared machine a torch thread pool whose threads get descheduled
    stalls at every parallel op: measured here under a load average of 10 on 2 CPUs, an eager
    CartPole rollout of 1024 envs ran at 42 k env-steps/s with two threads and 820 k with one.

    Examples:
        >>> quick_config().batches, quick_config().threads
        ((16, 1024, 16384), 1)
    """
    base = dict(
        envs=("CartPole-v1",),
        batches=(16, 1024, 16384),
        seconds=0.15,
        repeats=2,
        threads=1,
        compile_options={"steps_per_call": 1},
    )
    base.update(overrides)
    return CompareConfig(**base)


def _plan(
    cfg: CompareConfig,
    contenders: Sequence[Contender],
    skip: Callable[[Contender, str, str, str], None],
    log: Callable[[str], None] | None = None,
):
    """(env ref, device, batch, options, [contenders]) for every measurement, with skips logged;
    compiled runners print their compile lines through ``log`` (above the progress bar)."""
    plan = []
    threads = cfg.threads or available_cpus()
    for env_id in cfg.envs:
        ref = parse_env_id(env_id)
        for device in cfg.devices:
            opts = BenchOptions(
                device=device,
                seed=cfg.seed,
                threads=threads,
                transforms=tuple(cfg.transforms),
                compile_options={**({"log": log} if log is not None else {}), **cfg.compile_options},
            )
            for batch in cfg.batches:
                active = []
                for c in contenders:
                    reason = c.skip_reason(ref, batch, opts)
                    if reason is None:
                        active.append(c)
                    else:
                        skip(c, ref.label, device, reason)
                if active:
                    plan.append((ref, device, batch, opts, active))
    return plan


def run_compare(
    cfg: CompareConfig,
    log: Callable[[str], None] | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Runs the comparison and returns its results as JSON-ready data.

    Args:
        cfg: what to measure.
        log: prints one line (skips, per-batch summaries); default: the progress bar's stream.
        progress: draw a progress bar (default: when standard error is a terminal).

    Returns:
        ``{"created", "config", "machine", "rows", "skipped", "what", "elapsed_s", "load_average"}``;
        each row holds
        env, device, contender, label, ran_on, batch, steps, best, median, samples, warmup_s and
        compile_s.

    Examples:
        >>> res = run_compare(CompareConfig(batches=(2,), steps=3, repeats=1, gpusim=("eager",), peers=()),
        ...                   log=lambda line: None)
        >>> res["rows"][0]["best"] > 0
        True
    """
    start = time.perf_counter()
    load_start = _load_average()
    threads = cfg.threads or available_cpus()
    torch.set_num_threads(threads)
    skipped: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    bar = Progress(0, enabled=progress)
    emit = bar.log if log is None else log
    warning = busy_warning(threads, load_start)
    if warning:
        emit(warning)

    def skip(c: Contender, env: str, device: str, reason: str) -> None:
        # one line per contender and reason (a missing library is said once, not per env)
        key = (c.name, reason)
        if key in seen:
            return
        seen.add(key)
        line = (
            f"{c.name}: {reason}" if "not installed" in reason else f"{c.name}: skipped for {env} on {device}: {reason}"
        )
        skipped.append({"contender": c.name, "env": env, "device": device, "reason": reason, "line": line})
        emit(line)

    contenders = []
    for c in cfg.contenders():
        missing = c.missing()
        if missing:
            skip(c, "*", "*", missing)
        else:
            contenders.append(c)
    plan = _plan(cfg, contenders, skip, emit)
    bar.total = sum(len(active) * (1 + cfg.repeats) for *_, active in plan)
    rows: list[dict[str, Any]] = []
    what: dict[str, str] = {}
    for ref, device, batch, opts, active in plan:
        steps = cfg.steps or steps_for(batch, cfg.seconds)
        runners: dict[str, Runner] = {}
        warmup: dict[str, float] = {}
        by_label: dict[str, Contender] = {}
        for c in active:
            label = c.label(opts)
            try:
                with warnings.catch_warnings():
                    if c.peer is not None:  # peers' own warnings (dtype casts in their spaces, ...)
                        warnings.simplefilter("ignore")
                    runner = c.build(ref, batch, opts)
                    warmup[label] = runner.timed(steps)
            except Exception as err:  # noqa: BLE001 - a peer that fails is reported and left out
                if c.peer is None:
                    raise
                skip(c, ref.label, device, f"failed at batch {batch}: {type(err).__name__}: {str(err)[:200]}")
                bar.total -= 1 + cfg.repeats
                continue
            runners[label], by_label[label] = runner, c
            what.setdefault(c.name, c.what)
            bar.tick(f"{ref.label} {device} B={batch} {label} (warm-up)")
        results: dict[str, Measurement] = measure(
            runners,
            batch,
            steps,
            cfg.repeats,
            warmup=warmup,
            tick=lambda name: bar.tick(f"{ref.label} {device} B={batch} {name}"),
        )
        for label, m in results.items():
            c = by_label[label]
            rows.append(
                {
                    "env": ref.label,
                    "device": device,
                    "contender": c.name,
                    "label": label,
                    "ran_on": runners[label].device,
                    "batch": batch,
                    "steps": steps,
                    "best": m.best,
                    "median": m.median,
                    "samples": m.samples,
                    "warmup_s": m.warmup_s,
                    "compile_s": m.compile_s,
                }
            )
        for runner in runners.values():
            try:
                runner.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        del runners
        gc.collect()
        emit(
            f"{ref.label} on {device}, batch {batch}, T={steps}: "
            + ", ".join(f"{label} {m.best / 1e6:.3g} M" for label, m in results.items())
        )
    bar.close()
    return {
        "created": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "config": cfg.as_dict(),
        "machine": machine_info(),
        "rows": rows,
        "skipped": skipped,
        "what": what,
        "elapsed_s": round(time.perf_counter() - start, 1),
        "load_average": {"start": load_start, "end": _load_average()},
    }


def busy_warning(threads: int, load: float | None = None) -> str | None:
    """A warning when the machine is busier than its CPUs and torch uses several threads.

    Args:
        threads: torch's thread count for the run.
        load: the 1-minute load average (default: read now).

    Examples:
        >>> busy_warning(2, load=1000.0)  # doctest: +ELLIPSIS
        'warning: load average 1000.0 on ... CPUs: ... (use --threads 1 on a busy machine)'
        >>> busy_warning(1, load=99.0) is None
        True
    """
    load = _load_average() if load is None else load
    cpus = available_cpus()
    if threads <= 1 or load is None or load <= cpus:
        return None
    return (
        f"warning: load average {load:.1f} on {cpus} CPUs: other work shares the cores, and a torch thread pool "
        f"of {threads} stalls whenever one of its threads is descheduled; torch-based figures will be far too low "
        "(use --threads 1 on a busy machine)"
    )


def _load_average() -> float | None:
    """The 1-minute load average (``None`` where the OS has none): figures taken while other
    work runs on the same cores are not comparable with a quiet machine's."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def write_reports(result: dict[str, Any], out_dir: str | os.PathLike, plot: bool = True) -> dict[str, Path | str]:
    """Writes ``compare.md``, ``compare.json`` and (with matplotlib) ``compare.png`` to ``out_dir``.

    Returns:
        ``{"markdown": path, "json": path, "plot": path or the reason there is none}``.

    Examples:
        >>> import tempfile
        >>> res = run_compare(CompareConfig(batches=(2,), steps=2, repeats=1, gpusim=("eager",), peers=()),
        ...                   log=lambda line: None)
        >>> paths = write_reports(res, tempfile.mkdtemp(), plot=False)
        >>> paths["json"].name, paths["markdown"].name
        ('compare.json', 'compare.md')
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "compare.md"
    md.write_text(markdown_report(result), encoding="utf-8")
    paths: dict[str, Path | str] = {"markdown": md, "json": write_json(result, out / "compare.json")}
    if plot:
        try:
            paths["plot"] = plot_results(result, out / "compare.png")
        except ImportError as err:
            paths["plot"] = f"no plot: {err}"
    else:
        paths["plot"] = "no plot (not asked for)"
    return paths
