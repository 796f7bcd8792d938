"""The ``gpusim`` command line (also ``python -m gpusim``).

Commands:

* ``gpusim bench ENV_ID``: one env's throughput (eager or ``--compile``, with transforms), a
  progress bar and a summary line;
* ``gpusim compare``: gpusim eager and compiled against every installed peer, alternating in
  one run; writes a markdown table, a JSON file and a log-log PNG plot (see
  :mod:`gpusim.bench.compare`);
* ``gpusim list``: envs, transforms, wrapped/peer libraries and whether each is installed,
  CUDA and Triton;
* ``gpusim check ENV_ID``: ``check_env_specs`` with a readable report.

Bad arguments print ``gpusim <command>: error: ...`` and exit with status 2; a failed
``check`` exits with 1.

Examples:
    >>> main(["bench", "CartPole-v1", "--num-envs", "8", "--steps", "4", "--repeats", "1", "--device", "cpu"])  # doctest: +ELLIPSIS
    gpusim bench: CartPole-v1, 8 envs, 4 steps, device cpu, eager
    CartPole-v1 x 8 on cpu, eager: ... env-steps/s (best of 1 runs of 4 steps...)
    0
    >>> main(["bench", "CartPole-v1", "--num-envs", "0"])
    2
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main", "build_parser"]


class _UsageError(Exception):
    """A bad argument found after parsing (reported like argparse's errors, exit status 2)."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive int, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive int, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _argtype(check: Callable[[str], Any]) -> Callable[[str], str]:
    """An argparse type that runs ``check`` and turns its ``ValueError`` into a usage error."""

    def parse(text: str) -> str:
        try:
            check(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        return text

    parse.__name__ = getattr(check, "__name__", "value")
    return parse


def _env_id(text: str) -> str:
    from gpusim.bench.envs import parse_env_id

    return _argtype(parse_env_id)(text)


def _device(text: str) -> str:
    from gpusim.bench.compare import check_device

    return _argtype(check_device)(text)


def _transform(text: str) -> str:
    from gpusim.bench.envs import check_transform_names

    return _argtype(lambda name: check_transform_names([name]))(text)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``gpusim`` command.

    Examples:
        >>> build_parser().parse_args(["list"]).command
        'list'
    """
    from gpusim.bench.compare import PEER_NAMES, default_device

    parser = argparse.ArgumentParser(
        prog="gpusim", description="gpusim: GPU-first batched RL envs with the torchrl.envs API."
    )
    parser.add_argument("--version", action="version", version=f"gpusim {_gpusim_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "bench",
        help="one env's throughput (env-steps/s)",
        description=(
            "Time env.rollout(T, break_when_any_done=False) of one gpusim env (random actions, auto-reset): "
            "one warm-up run, then --repeats timed runs."
        ),
    )
    p.add_argument(
        "env_id", type=_env_id, metavar="ENV_ID", help="e.g. CartPole-v1, gym:Acrobot-v1, vmas:simple_spread"
    )
    p.add_argument("--num-envs", type=_positive_int, default=4096, help="batch size (default: 4096)")
    p.add_argument("--steps", type=_positive_int, default=200, help="steps per run (default: 200)")
    p.add_argument("--device", type=_device, default=default_device(), help="default: cuda when available, else cpu")
    p.add_argument("--compile", action="store_true", help="run through env.compile() (torch.compile, native envs)")
    p.add_argument(
        "--transforms",
        nargs="+",
        type=_transform,
        default=[],
        metavar="NAME",
        help="transform presets to append (see `gpusim list`)",
    )
    p.add_argument("--repeats", type=_positive_int, default=3, help="timed runs (default: 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=_positive_int, default=None, help="torch threads (default: the CPUs available)")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser(
        "compare",
        help="gpusim against every installed peer: table, JSON and plot",
        description=(
            "gpusim eager and compiled against every installed peer (torchrl, gymnasium, envpool, gymnax, raw "
            "vmas, brax, the minatar package), in turns in one run; peers that are not installed are skipped with one line each. "
            "Writes compare.md, compare.json and compare.png to --out."
        ),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="CartPole-v1 at 16, 1024 and 16384 envs, short runs, one thread (a few minutes on a "
        "2-core CPU); the other options override it",
    )
    p.add_argument("--envs", nargs="+", type=_env_id, default=None, metavar="ENV_ID", help="default: CartPole-v1")
    p.add_argument(
        "--batches",
        nargs="+",
        type=_positive_int,
        default=None,
        metavar="N",
        help="default: 1 16 256 4096 65536 (and 1048576 on CUDA)",
    )
    p.add_argument(
        "--devices",
        nargs="+",
        type=_device,
        default=None,
        metavar="DEVICE",
        help="default: cuda when available, else cpu",
    )
    p.add_argument(
        "--peers",
        nargs="*",
        choices=PEER_NAMES,
        default=None,
        metavar="PEER",
        help=f"peers to include, among {', '.join(PEER_NAMES)} (default: all; none with an empty list)",
    )
    p.add_argument("--no-compile", action="store_true", help="leave out gpusim compiled")
    p.add_argument("--steps", type=_positive_int, default=None, help="steps per run (default: from --seconds)")
    p.add_argument("--seconds", type=_positive_float, default=None, help="target seconds per run (default: 0.5)")
    p.add_argument("--repeats", type=_positive_int, default=None, help="timed runs per contender (default: 3)")
    p.add_argument(
        "--threads", type=_positive_int, default=None, help="torch and EnvPool threads (default: the CPUs available)"
    )
    p.add_argument(
        "--transforms",
        nargs="+",
        type=_transform,
        default=None,
        metavar="NAME",
        help="transform presets for gpusim and torchrl (peers without transforms are skipped)",
    )
    p.add_argument("--out", default="gpusim-compare", metavar="DIR", help="output folder (default: gpusim-compare)")
    p.add_argument("--no-plot", action="store_true", help="write no PNG")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("list", help="envs, transforms, libraries, CUDA and Triton")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser(
        "check",
        help="check_env_specs with a readable report",
        description=(
            "Build ENV_ID, print its specs and run check_env_specs (a short rollout compared with the specs). "
            "With --determinism, run gpusim.check_determinism on a native id instead: same seed twice, compiled "
            "twice, eager vs compiled, batch size, masked vs sparse resets, SerialEnv vs ParallelEnv."
        ),
    )
    p.add_argument("env_id", type=_env_id, metavar="ENV_ID")
    p.add_argument("--num-envs", type=_positive_int, default=None, help="batch size (default: 4)")
    p.add_argument("--steps", type=_positive_int, default=None, help="rollout length (default: 3)")
    p.add_argument("--device", type=_device, default="cpu", help="default: cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--determinism",
        action="store_true",
        help="check reproducibility (gpusim.check_determinism) instead of the specs; "
        "--steps then defaults to 50 and --num-envs to 8",
    )
    p.add_argument("--no-compile", action="store_true", help="--determinism: leave out the compiled checks")
    p.set_defaults(func=_cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``gpusim`` command line and returns its exit status.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        0 on success, 1 when ``check`` finds a mismatch, 2 for bad arguments.

    Examples:
        >>> main(["check", "Pong"])
        2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed the usage error (2) or the help (0)
        return int(exit_.code or 0)
    try:
        return args.func(args)
    except _UsageError as err:
        print(f"gpusim {args.command}: error: {err} (see gpusim {args.command} --help)", file=sys.stderr)
        return 2


# ------------------------------------------------------------------------------------ commands
def _gpusim_version() -> str:
    import gpusim

    return gpusim.__version__


def _build(env_id: str, num_envs: int, device: str, seed: int, transforms: Sequence[str] = ()):
    """Builds the env, turning errors caused by the arguments into usage errors."""
    from gpusim.bench.envs import build_env

    try:
        return build_env(env_id, num_envs, device=device, seed=seed, transforms=transforms)
    except (ValueError, TypeError, KeyError, ImportError) as err:
        raise _UsageError(f"cannot build {env_id!r}: {err}") from err
    except Exception as err:
        if type(err).__module__.split(".")[0] in ("gymnasium", "vmas"):  # e.g. an unknown gymnasium id
            raise _UsageError(f"cannot build {env_id!r}: {type(err).__name__}: {err}") from err
        raise


def _set_threads(threads: int | None) -> int:
    import torch

    from gpusim.bench.compare import busy_warning
    from gpusim.bench.report import available_cpus

    threads = threads or available_cpus()
    torch.set_num_threads(threads)
    warning = busy_warning(threads)
    if warning:
        print(warning, file=sys.stderr)
    return threads


def _cmd_bench(args: argparse.Namespace) -> int:
    from gpusim.bench.progress import Progress
    from gpusim.bench.report import fmt_rate
    from gpusim.bench.timing import Runner, measure

    _set_threads(args.threads)
    if args.compile:
        from gpusim.bench.envs import parse_env_id

        if parse_env_id(args.env_id).kind != "native":
            raise _UsageError(f"--compile runs native envs only; {args.env_id!r} wraps a library stepped on the host")
    mode = "compiled" if args.compile else "eager"
    extra = f", transforms: {', '.join(args.transforms)}" if args.transforms else ""
    print(f"gpusim bench: {args.env_id}, {args.num_envs} envs, {args.steps} steps, device {args.device}, {mode}{extra}")
    sys.stdout.flush()
    env = _build(args.env_id, args.num_envs, args.device, args.seed, args.transforms)
    bar = Progress(1 + args.repeats)  # the warm-up run, then the timed runs
    if args.compile:  # the compile lines are printed above the bar
        compiled = env.compile(log=bar.log)
        runner = Runner(
            lambda steps: compiled(steps), device=str(env.device), compile_seconds=lambda: compiled.compile_seconds
        )
    else:
        runner = Runner(lambda steps: env.rollout(steps, break_when_any_done=False), device=str(env.device))
    result = measure({mode: runner}, args.num_envs, args.steps, args.repeats, tick=lambda name: bar.tick(mode))
    bar.close()
    m = result[mode]
    compile_note = f", compile {m.compile_s:.2f} s" if m.compile_s else ""
    print(
        f"{args.env_id} x {args.num_envs} on {args.device}, {mode}{extra}: {fmt_rate(m.best)} env-steps/s "
        f"(best of {args.repeats} runs of {args.steps} steps; median {fmt_rate(m.median)}; "
        f"warm-up {m.warmup_s:.2f} s{compile_note})"
    )
    env.close()
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from gpusim.bench.compare import PEER_NAMES, CompareConfig, quick_config, run_compare, write_reports
    from gpusim.bench.report import markdown_report

    fields: dict[str, Any] = {}
    if args.envs is not None:
        fields["envs"] = tuple(args.envs)
    if args.devices is not None:
        fields["devices"] = tuple(args.devices)
    if args.batches is not None:
        fields["batches"] = tuple(args.batches)
    elif not args.quick and any(d.startswith("cuda") for d in fields.get("devices", (_default_device(),))):
        fields["batches"] = (1, 16, 256, 4096, 65536, 1 << 20)
    fields["peers"] = tuple(PEER_NAMES if args.peers is None else args.peers)
    if args.no_compile:
        fields["gpusim"] = ("eager",)
    for name in ("steps", "seconds", "repeats", "threads"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    if args.transforms is not None:
        fields["transforms"] = tuple(args.transforms)
    try:
        cfg = quick_config(**fields) if args.quick else CompareConfig(**fields)
    except ValueError as err:
        raise _UsageError(str(err)) from err
    result = run_compare(cfg)
    paths = write_reports(result, args.out, plot=not args.no_plot)
    print(markdown_report(result))
    print(f"finished in {result['elapsed_s']:.0f} s")
    print(f"table: {paths['markdown']}")
    print(f"plot:  {paths['plot']}")
    print(f"json:  {paths['json']}")
    return 0


def _default_device() -> str:
    from gpusim.bench.compare import default_device

    return default_device()


def _installed(module: str) -> str:
    if importlib.util.find_spec(module) is None:
        return "not installed"
    for dist in (module, module.replace("_", "-")):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "installed"


# module, role, what to install (from a checkout, the extras: -e ".[peers]", ".[jax-peers]", ...)
_LIBRARIES = (
    ("gymnasium", "GymEnv, GymWrapper (gym:<id>); compare peer", "gymnasium"),
    ("vmas", "VmasEnv, VmasWrapper (vmas:<scenario>); compare peer", "vmas"),
    (
        "torchrl",
        "compare peer (TorchRL EnvBase CartPole, VmasEnv)",
        "torchrl==0.14.1 in an environment of its own: it pins tensordict<0.15; extra peers",
    ),
    ("envpool", "compare peer", "envpool; extra peers"),
    ("gymnax", "compare peer (needs jax)", "jax gymnax; extra jax-peers"),
    ("brax", "compare peer (needs jax)", "jax brax; extra jax-peers"),
    ("minatar", "compare peer (MinAtar/<Game>-v0/-v1)", "minatar; extra peers"),
    ("jax", "runs gymnax and brax", "jax; extra jax-peers"),
    ("matplotlib", "the compare plot", "matplotlib; extra plot"),
    ("triton", "GPU kernels", "triton; extra triton"),
)


def _cmd_list(args: argparse.Namespace) -> int:
    import torch

    import gpusim.transforms as T
    from gpusim.bench.envs import TRANSFORM_PRESETS
    from gpusim.registry import _REGISTRY

    print(f"gpusim {_gpusim_version()} (torch {torch.__version__}, tensordict {_installed('tensordict')})")
    print("\nEnvs (ENV_ID):")
    for env_id, entry in _REGISTRY.items():
        limit = f"time limit {entry.max_episode_steps}" if entry.max_episode_steps else "no time limit"
        print(f"  {env_id:<26} {entry.env_cls.__name__}, {limit}")
    print(f"  {'gym:<gymnasium id>':<26} GymEnv over gymnasium's vector env ({_installed('gymnasium')})")
    print(f"  {'vmas:<scenario>':<26} VmasEnv, e.g. vmas:simple_spread ({_installed('vmas')})")
    names = sorted(n for n, v in vars(T).items() if isinstance(v, type) and issubclass(v, T.Transform))
    print("\nTransforms (gpusim.transforms; * = a --transforms preset):")
    line = " "
    for name in names:
        item = f" {name}{'*' if name in TRANSFORM_PRESETS else ''},"
        if len(line) + len(item) > 96:
            print(line)
            line = " "
        line += item
    print(line.rstrip(","))
    print("\nLibraries (wrapped, compared against, or used):")
    for module, role, install in _LIBRARIES:
        version = _installed(module)
        hint = f"  (pip install {install})" if version == "not installed" else ""
        print(f"  {module:<11} {version:<14} {role}{hint}")
    print("\nAccelerators:")
    if torch.cuda.is_available():
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        print(f"  CUDA: available, CUDA {torch.version.cuda}: {names}")
    else:
        built = f"torch built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU build of torch"
        print(f"  CUDA: not available ({built})")
    triton = _installed("triton")
    if triton == "not installed":
        print("  Triton: not installed (the kernels fall back to their torch references)")
    else:
        where = (
            "on CUDA"
            if torch.cuda.is_available()
            else "on CUDA only (here: the torch references; tests use TRITON_INTERPRET=1)"
        )
        print(f"  Triton: {triton}, kernels run {where}")
    return 0


def _spec_lines(title: str, spec) -> list[str]:
    lines = []
    for key in spec.keys(True, True):
        leaf = spec[key]
        name = key if isinstance(key, str) else "/".join(key)
        lines.append(
            f"  {title:<12} {name:<24} {str(leaf.dtype).replace('torch.', ''):<8} {list(leaf.shape)}  {type(leaf).__name__}"
        )
        title = ""
    return lines


def _cmd_check(args: argparse.Namespace) -> int:
    from gpusim.envs import check_env_specs

    if args.determinism:
        return _cmd_determinism(args)
    args.num_envs = args.num_envs or 4
    args.steps = args.steps or 3
    env = _build(args.env_id, args.num_envs, args.device, args.seed)
    print(f"gpusim check {args.env_id}: {type(env).__name__}, batch_size {list(env.batch_size)}, device {env.device}")
    print(f"  {'spec':<12} {'key':<24} {'dtype':<8} shape  type")
    for title, spec in (
        ("observation", env.full_observation_spec),
        ("state", env.full_state_spec),
        ("action", env.full_action_spec),
        ("reward", env.full_reward_spec),
        ("done", env.full_done_spec),
    ):
        for line in _spec_lines(title, spec):
            print(line)
    try:
        check_env_specs(env, seed=args.seed, steps=args.steps)
    except AssertionError as err:
        print(f"check_env_specs: FAILED after a {args.steps}-step rollout:\n  {err}")
        return 1
    finally:
        env.close()
    print(
        f"check_env_specs: OK (keys, shapes, dtypes, devices and values of {args.steps} steps, step by step and "
        "as a rollout, match the specs)"
    )
    return 0


def _cmd_determinism(args: argparse.Namespace) -> int:
    from gpusim.determinism import check_determinism
    from gpusim.registry import registered_ids

    if args.env_id not in registered_ids():
        raise _UsageError(
            f"--determinism checks the native ids gpusim.make knows, got {args.env_id!r}; known: {registered_ids()}"
        )
    num_envs = args.num_envs or 8
    report = check_determinism(
        args.env_id,
        num_envs=num_envs,
        large=max(64, num_envs),
        steps=args.steps or 50,
        seed=args.seed,
        device=args.device,
        compile=not args.no_compile,
    )
    print(report)
    print("determinism: OK (every guaranteed check holds)" if report.ok else "determinism: FAILED")
    return 0 if report.ok else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
