"""toksvc: a tokenization microservice for LLM backends."""

__version__ = "0.1.0"
