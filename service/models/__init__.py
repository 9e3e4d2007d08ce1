"""Models and billing: chat formats, conversation counts, estimates with prices, text budgets.

Between the store (profiles, price files, tokenizers) and the API; knows nothing of HTTP.
"""
