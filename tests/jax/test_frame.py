"""``Frame``: the packed JAX/torch transfer of the JAX wrappers is bit-exact both ways, for every
dtype the wrappers carry (float NaN payloads, bool, uint32 above 2**31, int32, empty arrays)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("jax", reason="jax is not installed (pip install 'gpusim[brax]')")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from gpusim.envs.libs._jax import Frame  # noqa: E402


@pytest.mark.parametrize("max_packed_bytes", [None, 8])  # shared buffers; large arrays alone
def test_round_trip_is_bit_exact_with_batch_views(max_packed_bytes):
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, (6, 3), dtype=np.uint64).astype(np.uint32)
    arrays = [
        jnp.asarray(bits.view(np.float32)),  # arbitrary float bit patterns, NaN payloads included
        jnp.asarray(rng.random(6) > 0.5),
        jnp.asarray(bits),
        jnp.asarray(rng.integers(-(2**31), 2**31 - 1, (6, 2, 2), dtype=np.int64).astype(np.int32)),
        jnp.zeros((6, 0), jnp.float32),
        jnp.asarray(rng.standard_normal(6).astype(np.float32)),
    ]
    frame = Frame.of(arrays, torch.Size([2, 3]))
    if max_packed_bytes is not None:
        frame = Frame([(tuple(a.shape), a.dtype) for a in arrays], frame.views, max_packed_bytes=max_packed_bytes)
    buffers = jax.jit(frame.pack)(arrays)
    # float32, bool, uint32, int32 buffers; or every array over 8 bytes alone (the empty one packed)
    assert len(buffers) == (4 if max_packed_bytes is None else 6)
    tensors = frame.to_torch(buffers)
    assert [t.shape for t in tensors] == [(2, 3, 3), (2, 3), (2, 3, 3), (2, 3, 2, 2), (2, 3, 0), (2, 3)]
    assert tensors[2].dtype == torch.int32 and tensors[1].dtype == torch.bool
    for array, tensor in zip(arrays, tensors):
        raw = np.asarray(array).reshape(tensor.shape)
        assert np.array_equal(tensor.numpy().view(np.uint8), raw.view(np.uint8))
    back = jax.jit(frame.unpack)(frame.from_torch(tensors))
    for array, again in zip(arrays, back):
        assert again.dtype == array.dtype and again.shape == array.shape
        assert np.array_equal(np.asarray(again).view(np.uint8), np.asarray(array).view(np.uint8))
    prefix = jax.jit(lambda b: frame.unpack(b, 2))(frame.from_torch(tensors[:2]))  # the others zero
    assert len(prefix) == 2 and np.array_equal(np.asarray(prefix[1]), np.asarray(arrays[1]))
