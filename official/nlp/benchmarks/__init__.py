"""Benchmarks against peer libraries (keras-hub, transformers): the logic behind `run_scripts/benchmark.py`.

The peers come from the `bench` extra (`pip install -e '.[bench]'`); nothing below `benchmarks` imports them.
"""
