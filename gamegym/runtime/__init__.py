"""The running gym: GameGym, the supervisor, the process entry points (Trainer, Predictor,
Selfplayer), the messages between them, the backends (local processes, Ray), the monitor and
TensorBoard, the one-process debug run.

May import: every layer below it (game, adapters, search, nets, learners, data); never
gamegym.evaluation, gamegym.bench or gamegym.cli, except the optional Evaluator process.
"""
