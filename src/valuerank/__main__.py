"""`python -m valuerank …`: the same CLI as the `valuerank` console script."""

from __future__ import annotations

from valuerank.entry import main

if __name__ == "__main__":
    main()
