"""Models and billing: chat formats, conversation counts, the providers' request shapes,
images, and estimates with prices.

Between the store (profiles, price files, tokenizers) and the API; knows nothing of HTTP.
"""
