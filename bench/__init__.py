"""Benchmarks and evaluations: they print and save figures, never assert.

``quire bench ...`` and ``quire eval ...`` run them. This package imports ``agent`` (and the
graphs, to time real turns); ``agent`` never imports it.
"""
