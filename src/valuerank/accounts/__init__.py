"""Accounts: organisations' users, their roles, API tokens and sessions."""

from valuerank.accounts.roles import Role

__all__ = ["Role"]
