"""Tests of the wrappers whose libraries load JAX: Brax, Jumanji, and EnvPool (its pools import
JAX for their XLA interface). They run in a pytest process of their own (``.ci/run``): JAX starts
threads, and the batched-env tests fork worker processes, which must not happen where JAX runs."""
