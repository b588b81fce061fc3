"""Provider API keys per organisation, encrypted at rest (Fernet, `VALUERANK_SECRET_KEY`).

The cipher itself lives in `valuerank.crypto`, shared with every other stored secret.
"""

from valuerank.credentials.store import (
    CredentialInfo,
    CredentialSource,
    CredentialUnreadable,
    MissingCredentialsError,
    delete_credential,
    key_hint,
    list_credentials,
    require_credentials,
    resolve_api_key,
    set_credential,
)

__all__ = [
    "CredentialInfo",
    "CredentialSource",
    "CredentialUnreadable",
    "MissingCredentialsError",
    "delete_credential",
    "key_hint",
    "list_credentials",
    "require_credentials",
    "resolve_api_key",
    "set_credential",
]
