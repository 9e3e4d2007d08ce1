"""Whole request and response bodies for the docs page: named examples per operation.

"Try it out" sends a request example as it is; with `cl100k_base` (tokenizer routes) or `gpt-4o`
(model routes) each one gets a 200 whose body is the response example of the same name
(tests/unit/api/test_openapi_docs.py checks both).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from service.api.wire.explain import ExplainRequest, InlineExplainRequest, TrainRequest
from service.api.wire.models import ChatCountRequest, EstimateRequest
from service.api.wire.providers import (
    AnthropicCountRequest,
    DetokenizeRequest,
    ResponsesInputRequest,
    TokenizeRequest,
)
from service.api.wire.textops import ChunkRequest, TruncateRequest
from service.api.wire.tokens import CountRequest, DecodeRequest, DecodeStepRequest, EncodeRequest

Examples = dict[str, tuple[str, dict[str, Any]]]  # name -> (summary, body)

CL100K = {
    "name": "cl100k_base",
    "version": "1",
    "sha256": "55e31bb263f2e9df55cd1b3ffc5c8c962897b61e777f12340ee97ab79ecfdbaf",
}
GPT4O = {
    "name": "gpt-4o",
    "version": "1",
    "sha256": "fbffe3d708f675c68ce830508176c73823632b8784ef19bed834d4fdc180b090",
}
O200K = {
    "name": "o200k_base",
    "version": "1",
    "sha256": "c9019bf39817205131ed3a911e9a84657938bb0e422e67a8b608774993955ca7",
}
PRICED = {  # the price file behind every estimate below
    "currency": "USD",
    "price_file": "openai@1",
    "price_file_sha256": "9b6eb8ea0d1aa34f37b670e7aed7e48279def2d5db5206ea0ec2c3293252ec14",
}
CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Hello, world"},
]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
CHAT_COUNTED = [
    {"index": 0, "role": "system", "tokens": 8},
    {"index": 1, "role": "user", "tokens": 7},
]
OVERHEAD = {"preamble": 0, "generation_prompt": 3}
MAX_OUTPUT = {"tokens": 16384, "cost": "0.16384"}  # gpt-4o's longest reply at $10 per million
SENTENCES = "Hello, world. How are you?"
HELLO, HOW = [9906, 11, 1917], [4438, 527, 499, 30]  # "Hello, world", "How are you?"
TEXTS = ["Hello, world", "How are you?"]
TEXTBOOK = [[98, 99, 256], [97, 98, 257], [257, 99, 258]]  # merges b+c, a+b, ab+c
STEP_BC = {
    "at": 1,
    "left": 98,
    "right": 99,
    "id": 256,
    "rank": 256,
    "bytes": "6263",
    "kind": "merge",
}

# request type of the operation -> (request examples, response examples)
EXAMPLES: dict[type[Struct], tuple[Examples, Examples]] = {
    EncodeRequest: (
        {
            "text": ("one text", {"text": "Hello, world"}),
            "texts": ("a batch of texts", {"texts": TEXTS}),
            "allowed": (
                "a special token allowed",
                {"text": "<|endoftext|>Hello", "allowed_special": ["<|endoftext|>"]},
            ),
            "as-text": (
                "special-token literals as plain text",
                {"text": "<|endoftext|>", "disallowed_special": []},
            ),
        },
        {
            "text": ("one text", {"tokenizer": CL100K, "ids": HELLO, "count": 3}),
            "texts": (
                "a batch of texts",
                {
                    "tokenizer": CL100K,
                    "results": [{"ids": HELLO, "count": 3}, {"ids": HOW, "count": 4}],
                },
            ),
            "allowed": (
                "a special token allowed",
                {"tokenizer": CL100K, "ids": [100257, 9906], "count": 2},
            ),
            "as-text": (
                "special-token literals as plain text",
                {"tokenizer": CL100K, "ids": [27, 91, 8862, 728, 428, 91, 29], "count": 7},
            ),
        },
    ),
    CountRequest: (
        {
            "text": ("one text", {"text": "Hello, world"}),
            "texts": ("a batch of texts", {"texts": TEXTS}),
        },
        {
            "text": ("one text", {"tokenizer": CL100K, "count": 3}),
            "texts": ("a batch of texts", {"tokenizer": CL100K, "counts": [3, 4], "total": 7}),
        },
    ),
    DecodeRequest: (
        {
            "ids": ("one id list", {"ids": HELLO}),
            "batch": ("a batch", {"batch": [HELLO, HOW]}),
            "base64": ("raw bytes of half a character", {"ids": [9468], "output": "base64"}),
            "replace": ("invalid UTF-8 replaced", {"ids": [9468], "errors": "replace"}),
        },
        {
            "ids": ("one id list", {"tokenizer": CL100K, "text": "Hello, world"}),
            "batch": (
                "a batch",
                {
                    "tokenizer": CL100K,
                    "results": [{"text": "Hello, world"}, {"text": "How are you?"}],
                },
            ),
            "base64": ("raw bytes of half a character", {"tokenizer": CL100K, "base64": "8J8="}),
            "replace": ("invalid UTF-8 replaced", {"tokenizer": CL100K, "text": "\ufffd"}),
        },
    ),
    DecodeStepRequest: (
        {
            "start": ("first step: the bytes of an unfinished 🙂 are held back", {"ids": [9468]}),
            "next": (
                "next and final step, with the state the first returned",
                {"ids": [19044, 5509], "state": "u8.0.8J8=", "final": True},
            ),
        },
        {
            "start": (
                "first step: the bytes of an unfinished 🙂 are held back",
                {"text": "", "state": "u8.0.8J8=", "tokenizer": CL100K},
            ),
            "next": (
                "next and final step, with the state the first returned",
                {"text": "🙂 ok", "state": "u8.7.", "tokenizer": CL100K},
            ),
        },
    ),
    ExplainRequest: (
        {"cat": ("a short text", {"text": "cat"})},
        {
            "cat": (
                "a short text",
                {
                    "rule": "ranks",
                    "ids": [4719],
                    "steps": 2,
                    "pieces": [
                        {
                            "text": "cat",
                            "start": [66, 64, 83],
                            "start_bytes": ["63", "61", "74"],
                            "steps": [
                                {
                                    "at": 1,
                                    "left": 64,
                                    "right": 83,
                                    "id": 266,
                                    "rank": 266,
                                    "bytes": "6174",
                                    "kind": "merge",
                                },
                                {
                                    "at": 0,
                                    "left": 66,
                                    "right": 266,
                                    "id": 4719,
                                    "rank": 4719,
                                    "bytes": "636174",
                                    "kind": "merge",
                                },
                            ],
                            "ids": [4719],
                        }
                    ],
                    "tokenizer": CL100K,
                },
            )
        },
    ),
    InlineExplainRequest: (
        {
            "pairs": (
                "the textbook counterexample under pairs",
                {"text": "abc", "rule": "pairs", "merges": TEXTBOOK},
            ),
            "ranks": (
                "the textbook counterexample under ranks",
                {"text": "abc", "rule": "ranks", "merges": TEXTBOOK},
            ),
        },
        {
            "pairs": (
                "the textbook counterexample under pairs",
                {
                    "rule": "pairs",
                    "ids": [97, 256],
                    "steps": 1,
                    "pieces": [
                        {
                            "text": "abc",
                            "start": [97, 98, 99],
                            "start_bytes": ["61", "62", "63"],
                            "steps": [STEP_BC],
                            "ids": [97, 256],
                        }
                    ],
                },
            ),
            "ranks": (
                "the textbook counterexample under ranks",
                {
                    "rule": "ranks",
                    "ids": [258],
                    "steps": 2,
                    "pieces": [
                        {
                            "text": "abc",
                            "start": [97, 98, 99],
                            "start_bytes": ["61", "62", "63"],
                            "steps": [
                                STEP_BC,
                                {
                                    "at": 0,
                                    "left": 97,
                                    "right": 256,
                                    "id": 258,
                                    "rank": 258,
                                    "bytes": "616263",
                                    "kind": "merge",
                                },
                            ],
                            "ids": [258],
                        }
                    ],
                },
            ),
        },
    ),
    TrainRequest: (
        {"small": ("three merges", {"text": "low lower lowest", "merges": 3, "min_frequency": 1})},
        {
            "small": (
                "three merges",
                {
                    "merges": [[108, 111, 256], [256, 119, 257], [32, 257, 258]],
                    "tokens": ["6c6f", "6c6f77", "206c6f77"],
                    "pattern": "gpt2",
                },
            )
        },
    ),
    ChatCountRequest: (
        {
            "chat": ("a conversation", {"messages": CHAT}),
            "tools": (
                "a message and a tool",
                {
                    "messages": [{"role": "user", "content": "Weather in Paris?"}],
                    "tools": [WEATHER],
                },
            ),
        },
        {
            "chat": (
                "a conversation",
                {
                    "input_tokens": 18,
                    "messages": CHAT_COUNTED,
                    "tools_tokens": 0,
                    "overhead": OVERHEAD,
                    "exact": False,
                    "method": "openai-estimate",
                    "model": GPT4O,
                    "tokenizer": O200K,
                },
            ),
            "tools": (
                "a message and a tool",
                {
                    "input_tokens": 47,
                    "messages": [{"index": 0, "role": "user", "tokens": 8}],
                    "tools_tokens": 36,
                    "overhead": OVERHEAD,
                    "exact": False,
                    "method": "openai-estimate",
                    "model": GPT4O,
                    "tokenizer": O200K,
                },
            ),
        },
    ),
    EstimateRequest: (
        {
            "chat": (
                "a conversation and an expected reply length",
                {"messages": CHAT, "output_tokens": 100},
            ),
            "text": (
                "a text and the request's output limit",
                {"text": "Hello, world", "max_output_tokens": 1000},
            ),
            "openai": (
                "a whole OpenAI chat-completions request",
                {
                    "model": "gpt-4o",
                    "messages": CHAT,
                    "temperature": 0.2,
                    "stream": True,
                    "max_completion_tokens": 500,
                },
            ),
        },
        {
            "chat": (
                "a conversation and an expected reply length",
                {
                    "input_tokens": 18,
                    "cached_input_tokens": 0,
                    "output_tokens": 100,
                    "exact": False,
                    "method": "openai-estimate",
                    "cost": {
                        "input": "0.000045",
                        "cached_input": "0.0",
                        "output": "0.001",
                        "total": "0.001045",
                    },
                    **PRICED,
                    "context_window": 128000,
                    "remaining_context": 127882,
                    "max_output": MAX_OUTPUT,
                    "model": GPT4O,
                    "tokenizer": O200K,
                },
            ),
            "text": (
                "a text and the request's output limit",
                {
                    "input_tokens": 3,
                    "cached_input_tokens": 0,
                    "output_tokens": 1000,
                    "exact": True,
                    "method": "text",
                    "cost": {
                        "input": "0.0000075",
                        "cached_input": "0.0",
                        "output": "0.01",
                        "total": "0.0100075",
                    },
                    **PRICED,
                    "context_window": 128000,
                    "remaining_context": 126997,
                    "max_output": MAX_OUTPUT,
                    "model": GPT4O,
                    "tokenizer": O200K,
                },
            ),
            "openai": (
                "a whole OpenAI chat-completions request",
                {
                    "input_tokens": 18,
                    "cached_input_tokens": 0,
                    "output_tokens": 500,
                    "exact": False,
                    "method": "openai-estimate",
                    "cost": {
                        "input": "0.000045",
                        "cached_input": "0.0",
                        "output": "0.005",
                        "total": "0.005045",
                    },
                    **PRICED,
                    "context_window": 128000,
                    "remaining_context": 127482,
                    "max_output": MAX_OUTPUT,
                    "model": GPT4O,
                    "tokenizer": O200K,
                    "ignored": ["model", "temperature", "stream"],
                },
            ),
        },
    ),
    AnthropicCountRequest: (
        {
            "chat": (
                "a conversation",
                {
                    "model": "gpt-4o",
                    "system": "You are terse.",
                    "messages": [{"role": "user", "content": "Hello, world"}],
                },
            ),
            "tool-use": (
                "a tool call and its result",
                {
                    "model": "qwen3",
                    "tools": [
                        {
                            "name": "get_weather",
                            "input_schema": {
                                "type": "object",
                                "properties": {"city": {"type": "string"}},
                            },
                        }
                    ],
                    "messages": [
                        {"role": "user", "content": "Weather in Paris?"},
                        {
                            "role": "assistant",
                            "content": [
                                {
                                    "type": "tool_use",
                                    "id": "t1",
                                    "name": "get_weather",
                                    "input": {"city": "Paris"},
                                }
                            ],
                        },
                        {
                            "role": "user",
                            "content": [
                                {
                                    "type": "tool_result",
                                    "tool_use_id": "t1",
                                    "content": "18 C, sunny",
                                }
                            ],
                        },
                    ],
                },
            ),
        },
        {
            "chat": ("a conversation", {"input_tokens": 18}),
            "tool-use": ("a tool call and its result", {"input_tokens": 171}),
        },
    ),
    ResponsesInputRequest: (
        {
            "chat": (
                "instructions and an input",
                {"model": "gpt-4o", "instructions": "You are terse.", "input": "Hello, world"},
            )
        },
        {
            "chat": (
                "instructions and an input",
                {"object": "response.input_tokens", "input_tokens": 18},
            )
        },
    ),
    TokenizeRequest: (
        {
            "prompt": ("a prompt", {"model": "gpt-4o", "prompt": "Hello, world"}),
            "chat": (
                "a conversation, rendered by the model's template",
                {"model": "qwen3", "messages": [{"role": "user", "content": "Hi"}]},
            ),
        },
        {
            "prompt": (
                "a prompt",
                {"count": 3, "max_model_len": 128000, "tokens": [13225, 11, 2375]},
            ),
            "chat": (
                "a conversation, rendered by the model's template",
                {
                    "count": 9,
                    "max_model_len": 32768,
                    "tokens": [151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198],
                },
            ),
        },
    ),
    DetokenizeRequest: (
        {"ids": ("ids", {"model": "gpt-4o", "tokens": [13225, 11, 2375]})},
        {"ids": ("ids", {"prompt": "Hello, world"})},
    ),
    TruncateRequest: (
        {
            "start": ("keep the start", {"text": "How are you?", "max_tokens": 2}),
            "end": ("keep the end", {"text": "How are you?", "max_tokens": 2, "keep": "end"}),
        },
        {
            "start": (
                "keep the start",
                {
                    "text": "How are",
                    "count": 2,
                    "truncated": True,
                    "start": 0,
                    "end": 7,
                    "tokenizer": CL100K,
                },
            ),
            "end": (
                "keep the end",
                {
                    "text": " you?",
                    "count": 2,
                    "truncated": True,
                    "start": 7,
                    "end": 12,
                    "tokenizer": CL100K,
                },
            ),
        },
    ),
    ChunkRequest: (
        {
            "chunks": ("chunks of at most 4 tokens", {"text": SENTENCES, "max_tokens": 4}),
            "overlap": (
                "overlapping by at most one token",
                {"text": SENTENCES, "max_tokens": 4, "overlap": 1},
            ),
        },
        {
            "chunks": (
                "chunks of at most 4 tokens",
                {
                    "chunks": [
                        {"text": "Hello, world.", "start": 0, "end": 13, "count": 4},
                        {"text": " How are you?", "start": 13, "end": 26, "count": 4},
                    ],
                    "tokenizer": CL100K,
                },
            ),
            "overlap": (
                "overlapping by at most one token",
                {
                    "chunks": [
                        {"text": "Hello, world.", "start": 0, "end": 13, "count": 4},
                        {"text": ". How are you", "start": 12, "end": 25, "count": 4},
                        {"text": " you?", "start": 21, "end": 26, "count": 2},
                    ],
                    "tokenizer": CL100K,
                },
            ),
        },
    ),
}
