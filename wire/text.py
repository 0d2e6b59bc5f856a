"""Patterns of the text the services store and show, for msgspec's `Meta(pattern=...)`: PostgreSQL stores no NUL in
text, and a name holds no line breaks."""

LINE = r"^[^\x00-\x1f\x7f]*$"
"""One line of text: no control characters (a name, a subject)."""
TEXT = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
"""Text over lines: tabs and line breaks, no other control character."""
EMAIL_PATTERN = r"^[^@\x00-\x20\x7f]+@[^@\x00-\x20\x7f]+\.[^@\x00-\x20\x7f]+$"
r"""An email address: something, `@`, something with a dot, none of it spaces or control characters (written without
`\s`, which regex engines read differently)."""
