"""Training an MLP on a dataset with either engine, and scoring a saved one.

``settings`` (TrainConfig, its defaults and the bounds on a run's cost), ``learners`` (a
model and its loss, per engine), ``loop`` (fit, score, a whole run), ``outputs`` (the run
folder, and the checkpoint, metrics and pictures in it), ``evaluate`` (scoring a
checkpoint). The command line for them is in ``cli``.
"""
