"""Build your own engine: the starter ``modelwright-autograd init`` writes and the grader
``modelwright-autograd check`` that runs a learner's engine in a child process
(``child``/``probe``), compares it with PyTorch or finite differences (``oracle``) on
small programs (``programs``) and names the bug (``grader``, ``report``)."""
