"""Backprop by hand (``init --backprop``, makemore part 4): the learner's gradient functions
graded tensor by tensor against PyTorch's autograd. ``grader`` runs the check, ``probe`` is
the child's side, ``reference`` PyTorch's, ``diagnose`` reads the usual bugs from the
numbers, ``replies`` the shape of the child's answers."""
