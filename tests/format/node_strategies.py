"""Hypothesis strategies for node files, shared by the node file tests."""

from __future__ import annotations

from typing import Sequence

from hypothesis import strategies as st

from trinitylake_dbapi.format.nodefile import Message, NodeFile

SYSTEM_NAMES = ("created_at_millis", "previous_root", "lakehouse_def")


@st.composite
def node_files(
    draw: st.DrawFn,
    text: st.SearchStrategy[str] = st.text(min_size=1, max_size=12),
    max_order: int = 9,
    system_names: Sequence[str] = SYSTEM_NAMES,
    max_messages: int = 8,
    child_name: str = "node-{}.arrow",
) -> NodeFile:
    """A valid node (leaf or internal) of order 3..``max_order`` whose strings come from
    ``text``, with up to ``max_messages`` buffered messages; child i is named
    ``child_name.format(i)``."""
    order = draw(st.integers(min_value=3, max_value=max_order))
    keys = sorted(draw(st.sets(text, max_size=order - 1)))
    internal = draw(st.booleans())
    return NodeFile(
        order=order,
        system=draw(st.dictionaries(st.sampled_from(list(system_names)), text)),
        keys=tuple(keys),
        values=tuple(draw(text) for _ in keys),
        children=tuple(child_name.format(i) for i in range(len(keys) + 1)) if internal else (),
        buffer=tuple(
            draw(st.lists(st.builds(Message, text, st.one_of(st.none(), text), text), max_size=max_messages))
        ),
    )
