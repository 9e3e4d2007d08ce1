"""The HTTP routes, by what they serve, and the helpers only they use."""
