"""The networks: Keras builders and layers, TensorFlow set-up and model loading, the CPU fast
paths (NumPy, ONNX Runtime) and their files (a model's fast form, `portable`; the fast-path file
beside each model iteration, made and loaded in `fastmodels`), and inference as a service (who
answers a search's requests).

May import: gamegym.data (the session folder's files), gamegym.game, gamegym.config,
gamegym.registry (a learner by name, for a model's fast form) and gamegym.parentwatch.
"""
