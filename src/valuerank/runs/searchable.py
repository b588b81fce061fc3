"""Text as transcript search compares it, the same on SQLite and PostgreSQL.

Neither database folds case the Unicode way on its own: SQLite's `lower()` and `LIKE` fold
ASCII only, and PostgreSQL's `lower()` depends on the database's locale and never folds "ß"
to "ss". So Python folds: the stored transcript's copy (`transcripts.search_text`, written with
the transcript) and the words searched for, and the database compares the two exactly.

The fold is Unicode canonical caseless matching, NFD(casefold(NFD(text))), stored composed
(NFC) because it is shorter: "CAFÉ", "Café" and a decomposed "café" (e + U+0301, as macOS
keyboards type it) all fold to "café", and "Straße", "STRASSE" to "strasse". Accents stay:
"cafe" does not find "café".
"""

from __future__ import annotations

import unicodedata


def searchable(text: str) -> str:
    """`text` case-folded and normalised for search (see the module's note)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())
