"""Bundled games: Santorini, tic-tac-toe and Connect Four as GameGraphs."""
