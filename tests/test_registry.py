"""``make`` argument checking and the registry's agreement with gymnasium's registrations."""

from __future__ import annotations

import gymnasium as gym
import pytest

from gpusim import make, registered_ids
from gpusim.registry import _REGISTRY


def test_registered_ids_and_limits_match_gymnasium() -> None:
    assert registered_ids()[:6] == [
        "CartPole-v1",
        "Pendulum-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Acrobot-v1",
        "TicTacToe-v0",
    ]
    minatar_gym = pytest.importorskip("minatar.gym")
    minatar_gym.register_envs()  # the package registers its ids on request
    minatar_ids = [i for i in gym.registry if i.startswith("MinAtar/")]
    assert sorted(i for i in registered_ids() if i.startswith("MinAtar/")) == sorted(
        i
        for i in minatar_ids
        if gym.spec(i).kwargs["game"] in {"asterix", "breakout", "freeway", "seaquest", "space_invaders"}
    )
    for env_id, entry in _REGISTRY.items():
        if env_id == "TicTacToe-v0" or env_id.startswith("MPE/"):  # not gymnasium envs: no time limit
            assert entry.max_episode_steps is None
            continue
        spec = gym.spec(env_id)
        assert entry.max_episode_steps == spec.max_episode_steps, env_id
        if env_id.startswith("MinAtar/"):
            assert entry.defaults["use_minimal_action_set"] == spec.kwargs["use_minimal_action_set"], env_id
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


# ---------------------------------------------------------------- register
@pytest.fixture
def scratch_ids():
    """Ids registered by a test are removed afterwards (the registry is process-global)."""
    before = set(_REGISTRY)
    yield
    for env_id in set(_REGISTRY) - before:
        del _REGISTRY[env_id]


def test_register_a_class_with_defaults_and_a_time_limit(scratch_ids) -> None:
    from gpusim import PendulumEnv, register

    register("Pend-test-v0", PendulumEnv, max_episode_steps=7, g=3.0, max_speed=4.0)
    assert "Pend-test-v0" in registered_ids()
    env = make("Pend-test-v0", num_envs=3, seed=1, max_speed=5.0)  # make's kwargs prevail
    assert (env.base_env.g, env.base_env.max_speed, env.batch_size) == (3.0, 5.0, (3,))
    td = env.rollout(10, break_when_any_done=False)
    assert td["next", "truncated"][:, 6].all() and not td["next", "truncated"][:, :6].any()
    assert make("Pend-test-v0", max_episode_steps=None).__class__ is PendulumEnv  # no limit
    assert make("Pend-test-v0", max_episode_steps=3).transform.max_steps == 3


def test_register_a_callable_and_a_module_string(scratch_ids) -> None:
    from gpusim import CartPoleEnv, register

    def short_pole(batch_size, device=None, seed=None, length=0.25):
        return CartPoleEnv(batch_size, device, seed, length=length)

    register("ShortPole-v0", short_pole, max_episode_steps=200)
    assert make("ShortPole-v0", num_envs=2, seed=0).base_env.length == 0.25
    assert make("ShortPole-v0", length=0.3).base_env.length == 0.3
    register("StrAcrobot-v0", "gpusim.envs.native.acrobot:AcrobotEnv", dt=0.1)
    env = make("StrAcrobot-v0", num_envs=2)
    assert type(env).__name__ == "AcrobotEnv" and env.dt == 0.1


def test_register_errors_are_clear(scratch_ids) -> None:
    from gpusim import CartPoleEnv, register

    with pytest.raises(ValueError, match=r"env id 'CartPole-v1' is already registered \(entry point CartPoleEnv\)"):
        register("CartPole-v1", CartPoleEnv)
    with pytest.raises(TypeError, match=r"register\('X-v0'\) got unexpected keyword argument\(s\) \['gravty'\]"):
        register("X-v0", CartPoleEnv, gravty=1.0)
    assert "X-v0" not in registered_ids()
    with pytest.raises(ValueError, match="a string entry point must be 'module:attr', got 'gpusim.CartPoleEnv'"):
        register("X-v0", "gpusim.CartPoleEnv")
    with pytest.raises(TypeError, match="entry_point must be an env class, a callable or 'module:attr', got 3"):
        register("X-v0", 3)
    with pytest.raises(ValueError, match="max_episode_steps must be a positive int or None, got 0"):
        register("X-v0", CartPoleEnv, max_episode_steps=0)
    with pytest.raises(ValueError, match="env_id must be a non-empty str"):
        register("", CartPoleEnv)
    register("Missing-v0", "gpusim.envs.native:NoSuchEnv")
    with pytest.raises(ImportError, match="entry point 'gpusim.envs.native:NoSuchEnv' could not be loaded"):
        make("Missing-v0")
    register("NotAnEnv-v0", lambda batch_size, device, seed: object())
    with pytest.raises(TypeError, match="the entry point of 'NotAnEnv-v0' returned object, not an env"):
        make("NotAnEnv-v0")


def test_unknown_kwarg_message_lists_make_arguments() -> None:
    """A typo of ``seed`` names the arguments ``make`` itself takes, not only the env's."""
    with pytest.raises(
        TypeError,
        match=r"\['seeed'\]; it accepts num_envs, device, seed, max_episode_steps, from_pixels, pixels_only and "
        r"CartPoleEnv's keyword arguments \['auto_reset_mode', ",
    ):
        make("CartPole-v1", seeed=0)
