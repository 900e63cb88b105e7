"""The commands that are not training tasks: each one's options and run(), which a thin
script (convert_checkpoint.py, hub_export/*.py) calls once its flags are read."""
