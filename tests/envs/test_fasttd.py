"""tensordict's private API lives in one module, checked at import, with a public-API fallback
that gives the same results."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import gpusim as gs
from gpusim.envs import _fasttd


def test_installed_tensordict_is_a_tested_version():
    ok, reason = _fasttd.check_private_api()
    assert ok and reason == "" and _fasttd.PRIVATE_API


@pytest.mark.parametrize("version", ["0.13.0", "0.16.0", "1.0.0"])
def test_untested_versions_are_refused(version):
    ok, reason = _fasttd.check_private_api(version)
    assert not ok and f"tensordict {version} is outside the versions gpusim is tested with" in reason


def test_an_untested_tensordict_warns_and_falls_back_at_import():
    code = (
        "import warnings, tensordict\n"
        "tensordict.__version__ = '0.99.0'\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import gpusim\n"
        "from gpusim.envs import _fasttd\n"
        "print(_fasttd.PRIVATE_API, any('public API' in str(x.message) for x in w))\n"
        "print(gpusim.make('CartPole-v1', num_envs=4, seed=0).rollout(5).shape)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False True", "torch.Size([4, 5])"]


def _rollouts():
    cart = gs.TransformedEnv(gs.CartPoleEnv(batch_size=[300], seed=0), gs.Compose(gs.StepCounter(10), gs.RewardSum()))
    serial = gs.SerialEnv(2, lambda: gs.PendulumEnv(batch_size=[3], seed=1))
    gym = gs.GymEnv("CartPole-v1", num_envs=4)
    out = []
    for env in (cart, serial, gym):
        env.set_seed(5)
        torch.manual_seed(0)
        out.append(env.rollout(30, break_when_any_done=False))
    serial.close()
    gym.close()
    return out


def test_public_api_fallback_gives_the_same_rollouts(monkeypatch):
    fast = _rollouts()
    monkeypatch.setattr(_fasttd, "PRIVATE_API", False)
    assert not _fasttd.is_plain(fast[0]) and _fasttd.inner(fast[0]) is None
    slow = _rollouts()
    for a, b in zip(fast, slow):
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        for key in a.keys(True, True):
            assert torch.equal(a[key], b[key]), key


def test_no_other_module_touches_the_private_api():
    import pathlib
    import re

    root = pathlib.Path(gs.__file__).parent
    pattern = re.compile(r"_new_unsafe|\._tensordict\b")
    offenders = [
        str(p.relative_to(root)) for p in root.rglob("*.py") if p.name != "_fasttd.py" and pattern.search(p.read_text())
    ]
    assert offenders == []


def test_fast_get_path_equals_get():
    from tensordict import LazyStackedTensorDict, TensorDict

    from gpusim.envs._fasttd import fast_get_path

    inner_td = TensorDict({"reward": torch.ones(3, 1), "deep": {"x": torch.zeros(3)}}, [3])
    td = TensorDict({"agents": inner_td, "obs": torch.zeros(())}, [])
    td.set(
        "lazy",
        LazyStackedTensorDict.lazy_stack(
            [TensorDict({"a": torch.ones(1)}, []), TensorDict({"a": torch.zeros(1)}, [])], 0
        ),
    )
    for key in [
        "obs",
        ("obs",),
        ("agents", "reward"),
        ("agents", "deep", "x"),
        ("agents", "nope"),
        "nope",
        ("lazy", "a"),
        ("nope", "x"),
    ]:
        got, ref = fast_get_path(td, key), td.get(key, None)
        assert (got is None and ref is None) or torch.equal(got, ref), key
    assert fast_get_path(td, ("agents",)) is td.get("agents")
    # a tensor where a container is expected: whatever get does (None, or an error in tensordict 0.14)
    try:
        ref = td.get(("obs", "x"), None)
    except ValueError:
        with pytest.raises(ValueError):
            fast_get_path(td, ("obs", "x"))
    else:
        assert ref is None and fast_get_path(td, ("obs", "x")) is None
