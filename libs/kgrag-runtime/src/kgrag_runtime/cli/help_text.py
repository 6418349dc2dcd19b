"""Help text a person reads: an on/off flag takes no value, so its help shows no `<bool>` type."""

from __future__ import annotations

from typing import Any

from typer.core import TyperOption


def hide_flag_types() -> None:
    """Typer's rich help prints a type for every option, flags included (`--json <bool>`, `--help <bool>`),
    which reads as if the flag wanted a value. Show no type for flags."""
    original = TyperOption.display_type_rich
    if getattr(original, "_kgrag_flags_hidden", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:  # typer's vendored click Context
        return None if self.is_flag and not self.count else original(self, ctx)

    display_type_rich._kgrag_flags_hidden = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
