"""Benchmarks of echomq-lab against a real Valkey, the embedded fakeredis and python-rq.

Run ``python -m benchmarks.run`` (``make bench``); ``--quick`` for a smoke run.
"""
