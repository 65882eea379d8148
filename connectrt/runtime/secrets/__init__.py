"""Secrets: config providers (KIP-297) and masking of secret keys and URL passwords.

Below plugins and config: the plugin registry discovers provider plugins through it, and config
resolution and every output path mask with it.
"""
