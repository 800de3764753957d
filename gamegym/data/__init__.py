"""The data on disk: the session folder (layout, lock, model registry), sample files, replay
buffers and their sum tree, and crash-safe file publication.

May import: gamegym.game and gamegym.config.
"""
