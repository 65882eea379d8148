"""Benchmarks for connectrt (run ``python bench/run_all.py`` or ``make bench``)."""
