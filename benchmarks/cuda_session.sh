#!/usr/bin/env bash
# What the device tool's GPU machine ran for the GPU figures of docs/benchmarks.md (torch, Triton and CUDA
# come with that machine's image; gpusim's other dependencies travel as wheels in .whl/, see
# the device tool's notes). Stages: tests, graphs, compare, vmas (the default set), and mpe (the
# TorchRL paper's Table 3: native MPE simple_spread against VmasEnv and raw VMAS, 100 steps, 1 to
# 30,000 envs), minatar (the five MinAtar games compiled, 4096 to 131072 envs), render (every row's
# frame against the step, and the compiled pixel chain), each by name (`bash cuda_session.sh mpe
# minatar render`: the device's 15 minutes do not hold all of them at once, compiles included);
# KERNELS=1 adds the compiled Triton kernel tests to the tests stage.
# Writes logs and the compare reports under $OUT (or ./cuda-session). The CartPole comparisons run
# 50 steps per run at every batch: from --seconds, compare picks T from the eager rate, which on the
# H100 gave 15 steps at 65536 and 10 at 1M, too few for the compiled runs' fixed cost per run.
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUSIM_COMPILE_VERBOSE=0
OUT=${OUT:-$PWD/cuda-session}; mkdir -p "$OUT"
stages=${*:-tests graphs compare vmas}
SITE=$(mktemp -d)  # the wheels, installed here for this session only
trap 'rm -rf "$SITE"' EXIT
site() {  # $1: target, rest: wheels
  local t=$1; shift
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$t" "$@" >/dev/null
}
site $SITE/base .whl/tensordict-0.15.3-*.whl .whl/gymnasium-*.whl .whl/farama_notifications-*.whl \
  .whl/vmas-*.whl .whl/pyglet-*.whl .whl/pyvers-*.whl .whl/trl/orjson-*.whl .whl/trl/importlib_metadata-*.whl
site $SITE/trl .whl/trl/*.whl .whl/gymnasium-*.whl .whl/farama_notifications-*.whl .whl/gym-0.26.2-*.whl .whl/gym_notices-*.whl \
  .whl/vmas-*.whl .whl/pyglet-*.whl .whl/pyvers-*.whl
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
PYTHONPATH=$SITE/base:$PWD python3 -c "import torch, triton, tensordict; print('torch', torch.__version__, 'triton', triton.__version__, 'tensordict', tensordict.__version__)" | tee -a "$OUT/device.txt"
for stage in $stages; do
  case $stage in
  tests)
    PYTHONPATH=$SITE/base:$PWD timeout 170 python3 -m pytest -q -p no:cacheprovider -n 4 \
      tests/envs/test_cuda_graphs.py tests/envs/test_compiled_rollout.py ${MORE_TESTS:-} 2>&1 \
      | grep -v DEBUG | grep -E "^E  |passed|failed|FAILED" | head -30
    [ -n "${KERNELS:-}" ] && GPUSIM_KERNEL_TESTS=compiled PYTHONPATH=$SITE/base:$PWD timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
      tests/kernels 2>&1 | tee "$OUT/kernels.log" | tail -6 ;;
  graphs)
    PYTHONPATH=$SITE/base:$PWD timeout 130 python3 benchmarks/bench_cuda_graphs.py --batches 4096 65536 1048576 2>&1 | tee "$OUT/graphs.log" | tail -14
    PYTHONPATH=$SITE/base:$PWD timeout 130 python3 benchmarks/bench_cuda_graphs.py --batches 4096 65536 1048576 --transforms 2>&1 | tee "$OUT/graphs_tf.log" | tail -14 ;;
  compare)
    PYTHONPATH=$SITE/trl:$PWD timeout 170 python3 -m gpusim compare --devices cuda --envs CartPole-v1 \
      --batches 4096 65536 1048576 --peers torchrl gymnasium --steps 50 --out "$OUT/cmp" --no-plot 2>&1 | grep -v DEBUG | tail -4
    PYTHONPATH=$SITE/trl:$PWD timeout 170 python3 -m gpusim compare --devices cuda --envs CartPole-v1 \
      --batches 4096 65536 1048576 --peers torchrl --transforms RewardSum InitTracker CatFrames VecNorm \
      --steps 50 --out "$OUT/cmp_tf" --no-plot 2>&1 | grep -v DEBUG | tail -4 ;;
  vmas)
    PYTHONPATH=$SITE/trl:$PWD timeout 110 python3 -m gpusim compare --devices cuda --envs vmas:simple_spread \
      --batches 64 1024 8192 65536 --peers torchrl vmas --seconds 0.5 --out "$OUT/cmp_vmas" --no-plot 2>&1 | grep -v DEBUG | tail -4 ;;
  mpe)
    PYTHONPATH=$SITE/trl:$PWD timeout 330 python3 -m gpusim compare --devices cuda --envs MPE/simple_spread-v0 \
      --batches 1 100 1000 10000 30000 --peers vmas vmasenv --steps 100 --out "$OUT/cmp_mpe" --no-plot 2>&1 | grep -v DEBUG | tail -4 ;;
  minatar)
    for game in Breakout Asterix Freeway SpaceInvaders Seaquest; do
      PYTHONPATH=$SITE/base:$PWD timeout 110 python3 -m gpusim compare --devices cuda --envs "MinAtar/$game-v1" \
        --batches 4096 32768 131072 --peers --steps 50 --out "$OUT/cmp_minatar_$game" --no-plot 2>&1 | grep -v DEBUG | tail -3
    done ;;
  render)
    PYTHONPATH=$SITE/base:$PWD timeout 200 python3 benchmarks/bench_render.py --device cuda --render-batch 4096 \
      --pipeline-batch 256 2>&1 | tee "$OUT/render.log" | tail -16 ;;
  esac
done
