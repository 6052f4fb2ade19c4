"""The LM checks of ``modelwright-autograd check``: a learner's ``lm_ops.py`` and ``models.py``
(``init --lm``) against PyTorch: the ops, makemore's MLP and nanoGPT's GPT, and training."""
