"""``ToyVLAEnv``: a synthetic env speaking the vision-language-action (VLA) data layout.

Environment card
----------------
Source:
    ``torchrl.envs.ToyVLAEnv`` (TorchRL 0.14): a plumbing and smoke-test env for VLA pipelines
    (chunked policies, language-conditioned batches), no simulator needed.
Observation:
    ``("observation", "image")`` uint8 ``[*B, C, H, W]`` (random noise, a stand-in camera);
    ``("observation", "state")`` float ``[*B, state_dim]``: its first ``action_dim`` entries
    echo the action just executed (zeros after a reset); in tracking mode the next
    ``action_dim`` entries hold the episode's target action. ``"language_instruction"``
    (non-tensor): the constant instruction string. Optional: ``"success"`` (bool ``[*B, 1]``,
    tracking mode), ``"group_id"`` (int64 ``[*B, 1]``, grouped rollouts), ``"pixels"`` (uint8
    ``[*B, S, S, 3]``, ``from_pixels=True``: the action drawn red and the target green on the
    ``[-1, 1]`` plane).
Action:
    ``Bounded(-1, 1)`` float ``[*B, action_dim]``.
Modes:
    echo (``success_steps=None``): reward ``-|action|``, never done. Tracking
    (``success_steps=k``): a target uniform in ``[-0.5, 0.5]^action_dim`` is drawn per episode;
    reward ``-|action - target|``; ``success`` (and ``terminated``) once the action has stayed
    within ``success_tol`` (max-norm) of the target ``k`` steps in a row. ``group_repeats=n``
    (one env only) replays each target for ``n`` consecutive episodes and stamps
    ``group_id_offset + episode // n``.
Seeding:
    one generator on the env's device draws images and targets.

Examples:
    >>> import torch
    >>> env = ToyVLAEnv(batch_size=[2], seed=0)
    >>> td = env.reset()
    >>> td["observation", "image"].dtype, td["language_instruction"][0]
    (torch.uint8, 'push the T-shaped block onto the target')
    >>> td["action"] = torch.full((2, 4), 0.5)
    >>> env.step(td)["next", "observation", "state"][:, :4].unique().tolist()  # the echo
    [0.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import NonTensorStack, TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs._partial import skip_next
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import merge_rows
from gpusim.specs import Bounded, Categorical, Composite, NonTensor, Unbounded

__all__ = ["ToyVLAEnv"]

_INSTRUCTION = "push the T-shaped block onto the target"
_ACTION_RGB = (220, 60, 60)
_TARGET_RGB = (60, 200, 60)


class ToyVLAEnv(EnvBase):
    """A synthetic VLA env: random images, an action-echoing state, a constant instruction.

    See the module card for the observation layout and the two modes.

    Args:
        action_dim: size of the ``[-1, 1]`` action.
        state_dim: size of the state (``>= action_dim``; ``>= 2 * action_dim`` when tracking).
        image_shape: ``(C, H, W)`` of the uint8 image.
        instruction: the language instruction.
        from_pixels: add a rendered ``"pixels"`` frame.
        render_size: side of the ``"pixels"`` frame.
        success_steps: tracking mode: consecutive in-tolerance steps for success (``None``: echo
            mode).
        success_tol: max-norm tolerance around the target, in ``(0, 0.5]``.
        group_repeats: episodes per target (tracking mode, a single env).
        group_id_offset: added to ``group_id``.
        batch_size: the env batch dims.
        device: where the data lives.
        seed: seed of the images and targets.

    Raises:
        ValueError: a ``state_dim`` too small for the mode, ``success_steps < 1``, a
            ``success_tol`` outside ``(0, 0.5]``, ``group_repeats`` without tracking, below 1 or
            with more than one env, ``render_size < 1``.

    Examples:
        >>> env = ToyVLAEnv(action_dim=2, state_dim=4, success_steps=2, seed=0)
        >>> td = env.reset()
        >>> for _ in range(2):  # an oracle reading the target off the state
        ...     td["action"] = td["observation", "state"][2:4]
        ...     td = env.step(td)["next"]
        >>> bool(td["success"]), bool(td["terminated"])
        (True, True)
    """

    def __init__(
        self,
        action_dim: int = 4,
        state_dim: int = 6,
        image_shape: Sequence[int] = (3, 16, 16),
        instruction: str = _INSTRUCTION,
        *,
        from_pixels: bool = False,
        render_size: int = 64,
        success_steps: int | None = None,
        success_tol: float = 0.25,
        group_repeats: int | None = None,
        group_id_offset: int = 0,
        batch_size: Sequence[int] | torch.Size | None = None,
        device: torch.device | str | None = None,
        seed: int | None = None,
    ) -> None:
        tracking = success_steps is not None
        need = 2 * action_dim if tracking else action_dim
        if state_dim < need:
            why = "the action then the target" if tracking else "the executed action"
            raise ValueError(f"ToyVLAEnv: state_dim must be >= {need} (it holds {why}), got {state_dim}")
        if tracking and success_steps < 1:
            raise ValueError(f"ToyVLAEnv: success_steps must be >= 1, got {success_steps}")
        if tracking and not 0.0 < success_tol <= 0.5:
            raise ValueError(
                f"ToyVLAEnv: success_tol must be in (0, 0.5] (targets lie in [-0.5, 0.5]), got {success_tol}"
            )
        if group_repeats is not None and not tracking:
            raise ValueError("ToyVLAEnv: group_repeats needs the tracking mode (set success_steps)")
        if group_repeats is not None and group_repeats < 1:
            raise ValueError(f"ToyVLAEnv: group_repeats must be >= 1, got {group_repeats}")
        if render_size < 1:
            raise ValueError(f"ToyVLAEnv: render_size must be >= 1, got {render_size}")
        super().__init__(batch_size=batch_size, device=device)
        B, dev = self.batch_size, self.device
        if group_repeats is not None and B.numel() > 1:
            raise ValueError(f"ToyVLAEnv: group_repeats replays one env's targets; got batch_size={list(B)}")
        self.action_dim, self.state_dim = int(action_dim), int(state_dim)
        self.image_shape = tuple(int(d) for d in image_shape)
        self.instruction = str(instruction)
        self.from_pixels, self.render_size = bool(from_pixels), int(render_size)
        self.success_steps = None if success_steps is None else int(success_steps)
        self.success_tol = float(success_tol)
        self.group_repeats = None if group_repeats is None else int(group_repeats)
        self.group_id_offset = int(group_id_offset)
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=dev)
        obs = Composite(
            observation=Composite(
                image=Unbounded((*B, *self.image_shape), dtype=torch.uint8, device=dev),
                state=Unbounded((*B, self.state_dim), device=dev),
                shape=B,
                device=dev,
            ),
            language_instruction=NonTensor(shape=B, example_data=self.instruction, device=dev),
            shape=B,
            device=dev,
        )
        if tracking:
            obs["success"] = flag.clone()
        if self.group_repeats is not None:
            obs["group_id"] = Unbounded((*B, 1), dtype=torch.int64, device=dev)
        if self.from_pixels:
            obs["pixels"] = Unbounded((*B, self.render_size, self.render_size, 3), dtype=torch.uint8, device=dev)
        self.observation_spec = obs
        self.action_spec = Bounded(-1.0, 1.0, shape=(*B, self.action_dim), device=dev)
        self.reward_spec = Unbounded((*B, 1), device=dev)
        self.full_done_spec = Composite(done=flag.clone(), terminated=flag.clone(), shape=B, device=dev)
        self.__dict__["_generator"] = torch.Generator(device=dev)
        self.__dict__["_episodes"] = 0
        self.register_buffer("_target", torch.zeros(*B, self.action_dim, device=dev), persistent=False)
        self.register_buffer("_streak", torch.zeros(*B, 1, dtype=torch.int64, device=dev), persistent=False)
        self.register_buffer("_group", torch.zeros(*B, 1, dtype=torch.int64, device=dev), persistent=False)
        self._set_seed(seed)

    # ------------------------------------------------------------------ pieces
    def _instruction(self) -> Any:
        if not len(self.batch_size):
            return self.instruction
        return NonTensorStack.from_list([self.instruction] * self.batch_size.numel()).reshape(self.batch_size)

    def _state(self, action: torch.Tensor | None) -> torch.Tensor:
        parts = [torch.zeros(*self.batch_size, self.action_dim, device=self.device) if action is None else action]
        if self.success_steps is not None:
            parts.append(self._target)
        used = sum(p.shape[-1] for p in parts)
        parts.append(torch.zeros(*self.batch_size, self.state_dim - used, device=self.device))
        return torch.cat([p.to(torch.get_default_dtype()) for p in parts], dim=-1)

    def _observation(self, state: torch.Tensor) -> TensorDictBase:
        image = torch.randint(
            0,
            256,
            (*self.batch_size, *self.image_shape),
            generator=self._generator,
            device=self.device,
            dtype=torch.uint8,
        )
        td = new_td(
            {"observation": new_td({"image": image, "state": state}, self.batch_size, self.device)},
            self.batch_size,
            self.device,
        )
        instruction = self._instruction()
        if isinstance(instruction, str):
            td.set_non_tensor("language_instruction", instruction)
        else:
            td.set("language_instruction", instruction)
        if self.from_pixels:
            td.set("pixels", self.render(state))
        return td

    def render(self, state: torch.Tensor) -> torch.Tensor:
        """Draws ``state``'s action (red) and, when tracking, its target (green).

        Args:
            state: ``[*B, state_dim]``.

        Returns:
            uint8 ``[*B, render_size, render_size, 3]``: 5x5 markers at the first two coordinates
            mapped from ``[-1, 1]`` to pixels (``x`` to columns, ``y`` to rows).

        Examples:
            >>> import torch
            >>> env = ToyVLAEnv(action_dim=2, state_dim=2, render_size=9)
            >>> frame = env.render(torch.tensor([-1.0, -1.0]))
            >>> frame.shape, frame[0, 0].tolist(), frame[8, 8].tolist()
            (torch.Size([9, 9, 3]), [220, 60, 60], [30, 30, 30])
        """
        size = self.render_size
        batch = state.shape[:-1]
        canvas = torch.full((*batch, size, size, 3), 30, dtype=torch.uint8, device=state.device)
        grid = torch.arange(size, device=state.device)
        markers = [(state[..., : self.action_dim], _ACTION_RGB)]
        if self.success_steps is not None:
            markers.append((state[..., self.action_dim : 2 * self.action_dim], _TARGET_RGB))
        for point, rgb in markers:  # two markers at most: a fixed, tiny loop
            pix = ((point.clamp(-1.0, 1.0) + 1.0) * 0.5 * (size - 1)).round().long()
            x = pix[..., 0]
            y = pix[..., 1] if self.action_dim > 1 else torch.zeros_like(x)
            rows = (grid - y.unsqueeze(-1)).abs() <= 2  # [*batch, size]
            cols = (grid - x.unsqueeze(-1)).abs() <= 2
            hit = (rows.unsqueeze(-1) & cols.unsqueeze(-2)).unsqueeze(-1)
            canvas = torch.where(hit, torch.tensor(rgb, dtype=torch.uint8, device=state.device), canvas)
        return canvas

    # ------------------------------------------------------------------ hooks
    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        B, dev = self.batch_size, self.device
        if self.success_steps is not None:
            reset = None if tensordict is None else tensordict.get("_reset", None)
            if reset is None:
                reset = torch.ones(*B, 1, dtype=torch.bool, device=dev)
            reset = reset.reshape(*B, 1)
            if self.group_repeats is not None:
                if self._episodes % self.group_repeats == 0:
                    self._target = self._draw_target()
                self._group = torch.full_like(self._group, self.group_id_offset + self._episodes // self.group_repeats)
                self.__dict__["_episodes"] = self._episodes + 1
            else:
                self._target = torch.where(reset, self._draw_target(), self._target)
            self._streak = torch.where(reset, torch.zeros_like(self._streak), self._streak)
        td = self._observation(self._state(None))
        false = torch.zeros(*B, 1, dtype=torch.bool, device=dev)
        td.set("done", false)
        td.set("terminated", false.clone())
        if self.success_steps is not None:
            td.set("success", false.clone())
        if self.group_repeats is not None:
            td.set("group_id", self._group.clone())
        return td

    def _draw_target(self) -> torch.Tensor:
        return torch.rand(*self.batch_size, self.action_dim, generator=self._generator, device=self.device) - 0.5

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        td = self._observation(self._state(action))
        if self.success_steps is None:
            td.set("reward", -action.norm(dim=-1, keepdim=True))
            false = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
            td.set("done", false)
            td.set("terminated", false.clone())
            return td
        error = action - self._target
        inside = (error.abs() <= self.success_tol).all(-1, keepdim=True)
        self._streak = torch.where(inside, self._streak + 1, torch.zeros_like(self._streak))
        success = self._streak >= self.success_steps
        td.set("reward", -error.norm(dim=-1, keepdim=True))
        td.set("success", success)
        td.set("terminated", success.clone())
        td.set("done", success.clone())
        if self.group_repeats is not None:
            td.set("group_id", self._group.clone())
        return td

    def _step_rows(self, tensordict: TensorDictBase, mask: torch.Tensor) -> TensorDictBase:
        """A partial step (``"_step"``): every row is computed, the skipped rows keep their data
        (zero reward) and their success streak (TorchRL's masked-out rows).

        Args:
            tensordict: the step input.
            mask: bool, the batch shape: the rows that step.

        Returns:
            The ``"next"`` data.

        Examples:
            >>> import torch
            >>> env = ToyVLAEnv(action_dim=1, state_dim=2, success_steps=1, batch_size=[2], seed=0)
            >>> td = env.reset()
            >>> td["action"] = td["observation", "state"][:, 1:2]  # the oracle
            >>> td["_step"] = torch.tensor([True, False])
            >>> env.step(td)["next", "success"].flatten().tolist()
            [True, False]
        """
        streak = self._streak
        out = merge_rows(self._step_output(tensordict), skip_next(self, tensordict, clone=False), mask)
        self._streak = torch.where(mask.reshape(streak.shape), self._streak, streak)
        return out

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._generator.manual_seed(int(seed))
