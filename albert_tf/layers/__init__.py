"""Keras layers of ALBERT."""

from albert_tf.layers.embeddings import AlbertEmbeddings
from albert_tf.layers.transformer import AlbertTransformerBlock
