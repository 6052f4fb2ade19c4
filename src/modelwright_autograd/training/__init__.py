"""Training an MLP on a dataset with either engine, and scoring a saved one.

``settings`` (TrainConfig and its defaults), ``learners`` (a model and its loss, per
engine), ``loop`` (fit, score, a whole run), ``outputs`` (checkpoint, metrics, pictures),
``evaluate`` (scoring a checkpoint). The command line for them is in ``cli``.
"""
