"""TransformedEnv(cache_specs=False): specs and the key lists derived from them follow the chain."""

import pytest

from gpusim.envs.native import PendulumEnv
from gpusim.specs import Unbounded
from gpusim.transforms import Transform, TransformedEnv


class _Switchable(Transform):
    """Adds an observation entry once switched on (a spec that changes without a chain edit)."""

    on = False

    def transform_observation_spec(self, observation_spec):
        if self.on:
            observation_spec["extra"] = Unbounded(shape=(*observation_spec.shape, 1))
        return observation_spec


def test_uncached_env_follows_spec_changes_in_its_key_lists():
    t = _Switchable()
    env = TransformedEnv(PendulumEnv(batch_size=[2]), t, cache_specs=False)
    assert env.observation_keys == ["observation"] and env.is_spec_locked
    t.on = True
    assert env.observation_keys == ["observation", "extra"]
    assert env.observation_spec.is_locked and env.input_spec.is_locked


def test_cached_env_keeps_its_key_lists_until_the_chain_changes():
    t = _Switchable()
    env = TransformedEnv(PendulumEnv(batch_size=[2]), t)
    assert env.observation_keys is env.observation_keys  # computed once
    t.on = True
    assert env.observation_keys == ["observation"]
    env.append_transform(Transform())
    assert env.observation_keys == ["observation", "extra"]


class _Broken(Transform):
    """A spec hook with a bug (an AttributeError) once switched on."""

    on = False

    def transform_observation_spec(self, observation_spec):
        if self.on:
            return observation_spec.no_such_method()
        return observation_spec


def test_an_attribute_error_inside_a_spec_hook_is_reported_not_hidden():
    t = _Broken()
    env = TransformedEnv(PendulumEnv(), t, cache_specs=False)
    t.on = True
    # Python would retry the lookup on the base env and return the base env's specs
    with pytest.raises(AttributeError, match="output_spec could not be computed because an internal error"):
        env.output_spec
    with pytest.raises(AttributeError, match="'PendulumEnv' object has no attribute 'tralala'"):
        env.tralala
