"""Model providers. SDKs are imported only by the provider that needs them."""
