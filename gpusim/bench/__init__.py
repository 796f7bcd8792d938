"""Throughput measurement: gpusim against its peers (the engine of ``gpusim bench`` and
``gpusim compare``).

* :mod:`gpusim.bench.envs`: env ids (native, ``gym:``, ``vmas:``) and transform presets;
* :mod:`gpusim.bench.timing`: runners and alternating measurements;
* :mod:`gpusim.bench.contenders` and :mod:`gpusim.bench.peers`: what is timed, per library;
* :mod:`gpusim.bench.compare`: the sweep; :mod:`gpusim.bench.report`: table, JSON and plot.

Nothing here imports a peer library until it is measured.

Examples:
    >>> from gpusim.bench import CompareConfig, run_compare
    >>> res = run_compare(CompareConfig(batches=(2,), steps=2, repeats=1, gpusim=("eager",), peers=()),
    ...                   log=lambda line: None)
    >>> res["rows"][0]["contender"]
    'gpusim eager'
"""

from gpusim.bench.compare import CompareConfig, quick_config, run_compare, write_reports
from gpusim.bench.contenders import BenchOptions, Contender
from gpusim.bench.envs import TRANSFORM_PRESETS, build_env, parse_env_id
from gpusim.bench.peers import PEERS
from gpusim.bench.timing import Measurement, Runner, measure

__all__ = [
    "CompareConfig",
    "quick_config",
    "run_compare",
    "write_reports",
    "BenchOptions",
    "Contender",
    "PEERS",
    "TRANSFORM_PRESETS",
    "build_env",
    "parse_env_id",
    "Measurement",
    "Runner",
    "measure",
]
