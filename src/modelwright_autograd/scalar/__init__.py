"""The scalar family: ``Value`` (engine.py), the nets built from it (nn.py) and the losses
on lists of Values (losses.py)."""
