"""Which groups and topics the monitor serves (`groups.include`, `groups.exclude`,
`topics.include`, `topics.exclude`): the cardinality controls every peer has. A name is served
when it matches an include pattern (every name, when there is none) and no exclude pattern.
Patterns are Python regular expressions matched against the whole name."""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Selection:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # Verdicts by name: a group's name is asked about at every snapshot of it.
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_include", _compiled(self.include))
        object.__setattr__(self, "_exclude", _compiled(self.exclude))

    @property
    def everything(self) -> bool:
        return not self.include and not self.exclude

    def __contains__(self, name: str) -> bool:
        verdict = self._seen.get(name)
        if verdict is None:
            include, exclude = self._include, self._exclude  # type: ignore[attr-defined]
            verdict = ((include is None or include.fullmatch(name) is not None)
                       and (exclude is None or exclude.fullmatch(name) is None))
            self._seen[name] = verdict
        return verdict


def _compiled(patterns: tuple[str, ...]) -> re.Pattern | None:
    """One pattern for all of them; raises ValueError naming the one that does not compile."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


EVERYTHING = Selection()
