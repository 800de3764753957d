"""The Ray backend: Selfplayers and one Predictor per node as Ray actors (the `.[ray]` extra).

May import: what gamegym.runtime may.
"""
