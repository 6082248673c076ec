"""Schema ids: which id new content gets, and the watermarks that keep freed ids unused.

    ids = SchemaIds(cache)                       # the writer holds one: `LogWriter.ids`
    schema_id = ids.id_for(content, pending)     # in a plan, under the write lock
    records.append(ids.release(deleted))         # with every hard delete of versions

An id means one schema, forever (DESIGN invariant 3). Ids come from the applied log:
content that has an id in its context keeps it; new content gets one above every id
the context has used (Confluent numbers ids per context, as its `IncrementalIdGenerator`
counts from the largest id it has read). Compaction may remove the last record of a
hard-deleted id, so the highest id ever used is also stated in the leader's fence (a
NOOP record, the newest of its key, which compaction keeps): a watermark per context,
raised by `release` with every write that frees ids, and carried by every new term's
fence (`fence`). An id above its context's watermark that the log does not hold was
never used.

Everything here reads the cache and plans records; nothing appends. Call it from a
plan, which runs under the writer's lock against a cache caught up with the log.
"""
from __future__ import annotations

from collections.abc import Iterable

from store.cache import Cache, ContentKey, content_key
from store.plans import PendingWrites, PlanAlone
from store.records import DEFAULT_CONTEXT, FenceValue, NoopKey, SchemaValue, context_of

#: The highest id there is: Confluent's ids are Java ints.
MAX_ID = 2**31 - 1


class IdsExhausted(RuntimeError):
    """Every id of the context up to `MAX_ID` is in use or was used before."""


class SchemaIds:
    """Id allocation and the id watermarks, over the cache a writer plans against.

    Never blocks and never touches the log. Not thread-safe by itself: call it from
    plans, which the writer runs one at a time.
    """

    def __init__(self, cache: Cache) -> None:
        self._cache = cache

    def id_for(self, content: ContentKey, pending: PendingWrites | None = None) -> int:
        """The id `content` already has in its context, or a fresh one above every id the
        context has used, counting the registrations `pending` in the same append as used
        (the same content pending under another subject shares its id).

        Raises PlanAlone when only a search below the top id is left, which is done
        alone in a batch, and IdsExhausted when no id is left at all.
        """
        existing = self._cache.id_by_content(content)
        if existing is not None:
            return existing
        context = content[0]
        top = self._cache.context_max_id(context)
        for value in pending.values() if pending else ():
            if isinstance(value, SchemaValue) and context_of(value.subject) == context:
                if content_key(context, value.schema_type, value.schema, value.references,
                               value.metadata, value.rule_set) == content:
                    return value.id  # the same content registered under another subject
                top = max(top, value.id)
        if top < MAX_ID:
            return top + 1
        if pending:
            raise PlanAlone("searching for a free id below the top one is done alone")
        # The top id is taken (an IMPORT of id 2^31-1, say). Ids above the watermark that
        # the log does not hold were never used: take the lowest of them.
        free = self._cache.lowest_free_id_above(self.watermark(context), MAX_ID, context)
        if free is None:
            raise IdsExhausted(f"No schema ids left: every id up to {MAX_ID} is in use or was used before")
        return free

    def watermark(self, context: str = DEFAULT_CONTEXT) -> int:
        """The highest id `context` may have used, as the latest fence states it."""
        fence = self._cache.fence
        if fence is None:
            return 0
        if context == DEFAULT_CONTEXT:
            return fence.max_id
        return dict(fence.context_max_ids).get(context, 0)

    def release(self, released: Iterable[SchemaValue]) -> tuple[NoopKey, FenceValue]:
        """The record to append with a write that hard-deletes the versions `released`:
        the latest fence re-stated with each context's watermark raised over the ids they
        held, since compaction may remove those ids' last records."""
        tops: dict[str, int] = {}
        for value in released:
            context = context_of(value.subject)
            tops[context] = max(tops.get(context, 0), value.id)
        return self.raised(tops)

    def raised(self, tops: dict[str, int]) -> tuple[NoopKey, FenceValue]:
        """The latest fence re-stated with the watermark of each context in `tops` raised
        to at least its id there (see `release`)."""
        fence = self._cache.fence or FenceValue("")
        contexts = dict(fence.context_max_ids)
        for context, top in tops.items():
            if context != DEFAULT_CONTEXT:
                contexts[context] = max(contexts.get(context, 0), top)
        max_id = max(self.watermark(), tops.get(DEFAULT_CONTEXT, 0))
        return NoopKey(), FenceValue(fence.token, fence.leader, max_id, tuple(sorted(contexts.items())))

    def fence(self, token: str, leader: str) -> FenceValue:
        """A new term's fence, for `leader` with `token`: it carries every watermark the
        previous one held."""
        previous = self._cache.fence
        contexts = previous.context_max_ids if previous is not None else ()
        return FenceValue(token, leader, self.watermark(), contexts)
