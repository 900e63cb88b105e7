"""Text to ids: ALBERT's tokenizer in Python and in-graph, segment packing, vocabulary training.

Imports nothing else of albert_tf but `files`.
"""
