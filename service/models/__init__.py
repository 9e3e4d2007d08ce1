"""Models and billing: chat formats, conversation counts, the providers' request shapes,
images, and estimates with prices. Between the store (profiles, price files, tokenizers) and the
API; knows nothing of HTTP.

The names below are the public API; the modules of the sub-packages (chat/, breakdown/,
images/) are internal and may change.
"""

from service.models.billing import Counted, Estimated, count_conversation, estimate_request
from service.models.counting import ChatCount, MessageCount

__all__ = [
    "ChatCount",
    "Counted",
    "Estimated",
    "MessageCount",
    "count_conversation",
    "estimate_request",
]
