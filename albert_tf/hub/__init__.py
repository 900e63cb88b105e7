"""TF-Hub SavedModels: writing the encoder, preprocessor and serving classifier; reading them."""
