"""Parallelism strategies as sharding rules over real models, and the model zoo."""
