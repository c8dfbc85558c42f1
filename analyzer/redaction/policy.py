"""What is redacted (`Redaction`): the default credentials, or none (--no-redact), and the keys and
JSON paths a user adds; carried to a recorder process as arguments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Redaction:
    """What is taken out of frames: the contract's credential names (unless `keep`), member
    names matching the user's glob patterns (any case), and the user's JSON paths."""

    keep: bool = False
    keys: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, keep: bool, keys, paths) -> "Redaction":
        """What --no-redact, --redact-key and --redact-path ask for; ValueError (saying which
        option) for a JSON path that cannot be read."""
        from mcptap.wire.jsonpath import parse_pattern

        for path in paths or ():
            try:
                parse_pattern(path)
            except ValueError as exc:
                raise ValueError(f"--redact-path: {exc}") from None
        return cls(keep=keep, keys=tuple(keys or ()), paths=tuple(paths or ()))

    def to_args(self) -> list[str]:
        """Command-line arguments that rebuild this in a recorder process (see from_args)."""
        args = ["--no-redact"] if self.keep else []
        for key in self.keys:
            args += ["--redact-key", key]
        for path in self.paths:
            args += ["--redact-path", path]
        return args

    @classmethod
    def from_args(cls, argv: list[str]) -> "Redaction":
        keep, keys, paths = False, [], []
        it = iter(argv)
        for arg in it:
            if arg == "--no-redact":
                keep = True
            elif arg == "--redact-key":
                keys.append(next(it))
            elif arg == "--redact-path":
                paths.append(next(it))
        return cls(keep, tuple(keys), tuple(paths))
