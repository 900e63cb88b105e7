"""Keras layers of ALBERT."""

from albert_tf.modeling.layers.embeddings import AlbertEmbeddings
from albert_tf.modeling.layers.layer_norm import LayerNorm
from albert_tf.modeling.layers.transformer import AlbertTransformerBlock
