"""The solved repository below is the learner's project, with its own tests: they run in a
copy of it (tests/test_workshop.py), never as this project's."""

collect_ignore_glob = ["*"]
