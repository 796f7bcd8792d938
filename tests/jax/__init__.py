"""Tests of the JAX-backed wrappers (Brax, Jumanji). They run in a pytest process of their own
(``.ci/run``): JAX starts threads, and the batched-env tests fork worker processes, which must not
happen in a process where JAX runs."""
