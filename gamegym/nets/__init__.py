"""The networks: Keras builders and layers, TensorFlow set-up and model loading, the CPU fast
paths (NumPy, ONNX Runtime) and their files (a model's fast form, `portable`), and inference as a
service (who answers a search's requests).

May import: gamegym.game and gamegym.config.
"""
