"""The herder: the single writer of connector configs, answering every management request."""
