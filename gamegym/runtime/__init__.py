"""The running gym: GameGym, the supervisor, the process entry points (Trainer, Predictor,
Selfplayer, Evaluator), the messages between them and the Selfplayers' pipes to the Predictor
(`pipes`), the backends (local processes, Ray), the monitor and TensorBoard, the one-process
debug run.

May import: every layer below it (evaluation, learners, search, nets, data, config, game,
adapters); never gamegym.serve, gamegym.bench or gamegym.cli.
"""
