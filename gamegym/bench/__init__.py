"""Benchmarks, one module per `gamegym bench` job: throughput, learning, calibration of the
yardsticks, the peer comparison with OpenSpiel, replay modes side by side, network paths.

May import: everything in gamegym but gamegym.cli.
"""
