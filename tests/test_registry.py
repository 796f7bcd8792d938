"""``make`` argument checking and the registry's agreement with gymnasium's registrations."""

from __future__ import annotations

import gymnasium as gym
import pytest

from gpusim import make, registered_ids
from gpusim.registry import _REGISTRY


def test_registered_ids_and_limits_match_gymnasium() -> None:
    assert registered_ids()[:6] == [
        "CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1", "TicTacToe-v0"
    ]
    minatar_gym = pytest.importorskip("minatar.gym")
    minatar_gym.register_envs()  # the package registers its ids on request
    minatar_ids = [i for i in gym.registry if i.startswith("MinAtar/")]
    assert sorted(i for i in registered_ids() if i.startswith("MinAtar/")) == sorted(
        i for i in minatar_ids if gym.spec(i).kwargs["game"] in {"asterix", "breakout", "freeway"}
    )
    for env_id, entry in _REGISTRY.items():
        if env_id == "TicTacToe-v0":  # not a gymnasium env: no time limit
            assert entry.max_episode_steps is None
            continue
        spec = gym.spec(env_id)
        assert entry.max_episode_steps == spec.max_episode_steps, env_id
        if env_id.startswith("MinAtar/"):
            assert entry.kwargs["use_minimal_action_set"] == spec.kwargs["use_minimal_action_set"], env_id
            assert entry.env_cls.game == spec.kwargs["game"], env_id


def test_tictactoe_is_registered_and_plays() -> None:
    from gpusim import TicTacToeEnv

    env = make("TicTacToe-v0", num_envs=4, seed=0, single_player=True)
    assert isinstance(env, TicTacToeEnv) and env.batch_size == (4,)
    td = env.rollout(12, break_when_any_done=False)
    assert td["next", "done"].any()


def test_make_lives_at_the_top_level_and_envs_do_not_import_transforms() -> None:
    """``make`` composes native envs and transforms at the top; ``gpusim.envs`` never imports
    ``gpusim.transforms`` (no import pointing up the layering)."""
    import ast
    import pathlib

    import gpusim

    root = pathlib.Path(gpusim.__file__).parent / "envs"
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("gpusim.transforms")]
    assert offenders == []
    assert gpusim.make is gpusim.registry.make
def test_unknown_id_lists_known_ids() -> None:
    with pytest.raises(ValueError, match=r"Unknown env id 'CartPole-v0'; known ids: \['CartPole-v1', 'Pendulum-v1'"):
        make("CartPole-v0")


def test_unknown_kwargs_are_named() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['foo', 'render_mode'\]"):
        make("Pendulum-v1", num_envs=2, foo=1, render_mode="human")
    with pytest.raises(TypeError, match=r"\['gravity'\]"):  # a CartPole constant is not a Pendulum one
        make("Pendulum-v1", gravity=9.81)


@pytest.mark.parametrize("num_envs", [0, -1, 2.0, True, "4"])
def test_bad_num_envs(num_envs) -> None:
    with pytest.raises(ValueError, match="num_envs must be a positive int or None"):
        make("CartPole-v1", num_envs=num_envs)
