"""CartPole, batched on device.

Environment card
----------------
Source:
    Gymnasium ``CartPole-v1`` (``gymnasium/envs/classic_control/cartpole.py``), the cart-pole of
    Barto, Sutton and Anderson (1983), "Neuronlike adaptive elements that can solve difficult
    learning control problems". Same equations, constants and thresholds, computed in float32.
Observation (``"observation"``, float32 ``[*B, 4]``, ``Bounded``):
    ``[x, x_dot, theta, theta_dot]``: cart position (``±2 * x_threshold``), cart velocity
    (``±inf``), pole angle (``±2 * theta_threshold_radians``), pole angular velocity (``±inf``).
State (``"state"``, float32 ``[*B, 4]``):
    the same four numbers, in the order of gymnasium's ``env.unwrapped.state``. The observation
    and the state are the same tensor (no copy is made).
Action (``"action"``, ``Categorical(2)``, int64 ``[*B]``):
    ``0`` pushes the cart left with ``force_mag``, ``1`` pushes it right.
Reward (``"reward"``, float32 ``[*B, 1]``):
    ``+1`` every step, the terminating one included. With ``sutton_barto_reward=True``: ``0``
    on non-terminating steps and ``-1`` on the terminating one.
Start state:
    all four numbers uniform in ``[-0.05, 0.05]`` (16-bit resolution, counter-based noise).
Episode end:
    terminated when ``|x| > x_threshold`` or ``|theta| > theta_threshold_radians``; truncation
    (500 steps for ``CartPole-v1``) comes from ``StepCounter`` (see :func:`gpusim.make`).
Arguments:
    ``gravity=9.8``, ``masscart=1.0``, ``masspole=0.1``, ``length=0.5`` (half the pole),
    ``force_mag=10.0``, ``tau=0.02`` (seconds per step), ``theta_threshold_radians=12 * 2 * pi /
    360``, ``x_threshold=2.4``, ``kinematics_integrator="euler"`` (or ``"semi-implicit euler"``),
    ``sutton_barto_reward=False``. ``total_mass`` and ``polemass_length`` are derived.
Differences from gymnasium:
    the env is stateless, so stepping past a termination (undefined in gymnasium) simply
    continues the physics with the same reward rule.

Examples:
    >>> env = CartPoleEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 4])
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native._base import NativeEnv, done_spec
from gpusim.envs.native._checks import check_choice, check_positive
from gpusim.envs.native._ops import advance, cos_sin, fma, plus_minus, stack_last
from gpusim.envs.native.rng import ResetRows
from gpusim.specs import Bounded, Categorical, Composite, Unbounded

__all__ = ["CartPoleEnv"]

_INTEGRATORS = ("euler", "semi-implicit euler")


class CartPoleEnv(NativeEnv):
    """Batched CartPole with gymnasium's ``CartPole-v1`` dynamics (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the reset noise (``None``: drawn from torch's global generator).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        gravity: gravitational acceleration (m/s^2).
        masscart: mass of the cart (kg).
        masspole: mass of the pole (kg).
        length: half the length of the pole (m).
        force_mag: magnitude of the push (N).
        tau: seconds between state updates.
        theta_threshold_radians: pole angle beyond which the episode terminates.
        x_threshold: cart position beyond which the episode terminates.
        kinematics_integrator: ``"euler"`` or ``"semi-implicit euler"``.
        sutton_barto_reward: use the 0 / -1 reward of the original implementation.
        randomize: ``{param: distribution}`` re-drawn for the rows that reset (parameters:
            ``params``; see :mod:`gpusim.envs.native.params`).
        expose_params: put the per-env parameters in the observation spec too.

    The physical constants in ``params`` may also be ``[*B]`` tensors (one value per env).

    Examples:
        >>> env = CartPoleEnv(batch_size=[2], seed=0, gravity=9.81)
        >>> env.total_mass
        1.1
        >>> td = env.reset()
        >>> td = env.step(env.rand_action(td))
        >>> td["next", "reward"].shape
        torch.Size([2, 1])
    """

    params = ("gravity", "masscart", "masspole", "length", "force_mag", "tau")

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        gravity: float = 9.8,
        masscart: float = 1.0,
        masspole: float = 0.1,
        length: float = 0.5,
        force_mag: float = 10.0,
        tau: float = 0.02,
        theta_threshold_radians: float = 12 * 2 * math.pi / 360,
        x_threshold: float = 2.4,
        kinematics_integrator: str = "euler",
        sutton_barto_reward: bool = False,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        self.gravity = check_positive("gravity", gravity)
        self.masscart = check_positive("masscart", masscart)
        self.masspole = check_positive("masspole", masspole)
        self.length = check_positive("length", length)
        self.force_mag = check_positive("force_mag", force_mag)
        self.tau = check_positive("tau", tau)
        self.theta_threshold_radians = check_positive("theta_threshold_radians", theta_threshold_radians)
        self.x_threshold = check_positive("x_threshold", x_threshold)
        self.kinematics_integrator = check_choice("kinematics_integrator", kinematics_integrator, _INTEGRATORS)
        if not isinstance(sutton_barto_reward, bool):
            raise TypeError(f"sutton_barto_reward must be a bool, got {sutton_barto_reward!r}")
        self.sutton_barto_reward = sutton_barto_reward
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            num_noise=4,
            noise_bits=16,
            randomize=randomize,
            expose_params=expose_params,
        )
        B, dev = self.batch_size, self.device
        inf = float("inf")
        high = torch.tensor(
            [2 * self.x_threshold, inf, 2 * self.theta_threshold_radians, inf], dtype=torch.float32, device=dev
        ).expand(*B, 4)
        self.observation_spec = Composite(
            observation=Bounded(-high, high, shape=(*B, 4), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.state_spec = Composite(
            state=Unbounded(shape=(*B, 4), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.action_spec = Categorical(2, shape=B, device=dev)
        self.reward_spec = Unbounded(shape=(*B, 1), dtype=torch.float32, device=dev)
        self.full_done_spec = done_spec(B, dev)

    @property
    def total_mass(self) -> float:
        """``masspole + masscart`` (derived, so it follows the masses given).

        Examples:
            >>> CartPoleEnv(masspole=0.2, masscart=2.0).total_mass
            2.2
        """
        return self.masspole + self.masscart

    @property
    def polemass_length(self) -> float:
        """``masspole * length`` (derived, so it follows the values given).

        Examples:
            >>> CartPoleEnv(masspole=0.2, length=1.0).polemass_length
            0.2
        """
        return self.masspole * self.length

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        state = rows.uniform(-0.05, 0.05, 4, bits=16)
        done, terminated = self._flags()
        _, echo = self.physics(tensordict, rows)
        return self._out(observation=state, state=state, done=done, terminated=terminated, **echo)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        state = tensordict["state"]
        action = tensordict["action"]
        x, x_dot, theta, theta_dot = state.unbind(-1)
        p, echo = self.physics(tensordict)
        masspole, length = p["masspole"], p["length"]
        total_mass = masspole + p["masscart"]
        pml = masspole * length
        force = plus_minus(action == 1, p["force_mag"])
        cos, sin = cos_sin(theta)
        # gymnasium's equations, with fused multiply-adds (in place on fresh intermediates):
        # temp = (force + polemass_length * theta_dot^2 * sin) / total_mass
        temp = fma(force, theta_dot.square(), sin, pml).div_(total_mass)
        # thetaacc = (gravity * sin - cos * temp) / (length * (4/3 - masspole * cos^2 / total_mass))
        denominator = cos.square().mul_(-length * masspole / total_mass).add_(length * 4.0 / 3.0)
        thetaacc = torch.addcmul(sin * p["gravity"], cos, temp, value=-1.0).div_(denominator)
        # xacc = temp - polemass_length * thetaacc * cos / total_mass
        xacc = fma(temp, thetaacc, cos, -pml / total_mass)
        tau = p["tau"]
        if self.kinematics_integrator == "euler":
            new_state = advance(state, (x_dot, xacc, theta_dot, thetaacc), tau)
        else:
            x_dot = x_dot + tau * xacc
            theta_dot = theta_dot + tau * thetaacc
            new_state = stack_last((x + tau * x_dot, x_dot, theta + tau * theta_dot, theta_dot))
        x, theta = new_state[..., 0:1], new_state[..., 2:3]
        terminated = (x.abs() > self.x_threshold) | (theta.abs() > self.theta_threshold_radians)
        if self.sutton_barto_reward:
            reward = torch.where(terminated, -1.0, 0.0)
        else:
            reward = torch.ones_like(terminated, dtype=torch.float32)
        return self._out(
            observation=new_state,
            state=new_state,
            reward=reward,
            done=terminated.clone(),
            terminated=terminated,
            **echo,
        )
