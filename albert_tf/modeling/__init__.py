"""The network: config, layers, encoder, heads, task models and the original checkpoint layout.

Imports nothing else of albert_tf but `files`.
"""
