"""The registry of loaded tokenizers (and model profiles): `name[@version]` resolved, a model's
name to its tokenizer, and what failed to load (`Registry.failures`). Loading it is
service.store.loader's; building one file, service.store.builder's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from service.bpe import Normalization, Rule, Tokenizer
from service.errors import ModelNotFoundError, StoreError, TokenizerNotFoundError
from service.store.firstuse import FirstUse
from service.store.formats.tokenizer import Metadata
from service.store.manifest import Loaded
from service.store.modelstore import LoadedModel, ModelTables


@dataclass(frozen=True, slots=True, eq=False)
class LoadedTokenizer(Loaded):
    """A verified tokenizer with the facts the API lists about it (not the merge list itself):
    its manifest entry's, and what its file says of it. The tokenizer itself is built at load or
    on first use (`built`)."""

    rule: Rule
    pattern: str | None
    normalization: Normalization
    metadata: Metadata
    special_tokens: dict[str, int]
    defined_ids: int  # ids defined, special tokens included (not tiktoken's n_vocab)
    built: FirstUse
    # format v2's added tokens not marked special: matched whole whatever a call allows
    added_tokens: dict[str, int] = field(default_factory=dict)

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer (built now if it was not yet; TokenizerUnavailableError if it fails)."""
        return self.built.get().tokenizer

    @property
    def self_consistent(self) -> bool:
        return self.built.get().self_consistent

    @property
    def known_self_consistent(self) -> bool | None:
        """Without building: always for `ranks`; for `pairs` once built, else None."""
        done = self.built.built
        return True if self.rule == "ranks" else done.self_consistent if done else None


@dataclass(slots=True)
class Registry:
    tokenizers: dict[str, LoadedTokenizer] = field(default_factory=dict)  # by name@version
    defaults: dict[str, str] = field(default_factory=dict)  # name -> name@version
    failures: list[StoreError] = field(default_factory=list)  # appended to by first-use builds
    load_seconds: float = 0.0
    models: ModelTables = field(default_factory=ModelTables)
    # the store state loaded: one store's manifest sha256, or that of several stores' hashes
    store_sha256: str = ""

    def resolve_model(self, ref: str) -> LoadedModel:
        """A model's name, alias or `name@version`."""
        found = self.models.models.get(self.models.names.get(ref, ""))
        if found is None:
            raise ModelNotFoundError(ref, self.models.names)  # every name, alias and ref
        return found

    def resolve(self, ref: str) -> LoadedTokenizer:
        """`name` gives the default version, `name@version` that version."""
        key = ref if "@" in ref else self.defaults.get(ref, "")
        found = self.tokenizers.get(key)
        if found is None:
            raise TokenizerNotFoundError(ref, [*self.tokenizers, *self.defaults])
        return found

    def tokenizer_for(self, ref: str) -> LoadedTokenizer:
        """A tokenizer reference, or a model's name, alias or `name@version`: that model's
        tokenizer. Neither: TokenizerNotFoundError listing (and suggesting) both kinds."""
        try:
            return self.resolve(ref)
        except TokenizerNotFoundError:
            model_key = self.models.names.get(ref)
            if model_key is None:
                known = [*self.tokenizers, *self.defaults, *self.models.names]
                raise TokenizerNotFoundError(ref, known) from None
        return self.resolve(self.models.models[model_key].tokenizer_ref)

    def __iter__(self) -> Iterator[LoadedTokenizer]:
        return iter(self.tokenizers.values())

    def __len__(self) -> int:
        return len(self.tokenizers)

    @property
    def complete(self) -> bool:
        """Every file of every store loaded (and there was at least one)."""
        return not self.failures and bool(self.tokenizers)
