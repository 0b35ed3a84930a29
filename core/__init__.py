"""The layer below every app: accounts and roles, the audit trail, broker access, the blind-mode
hook, request helpers and text normalization. It imports no other app of the project
(``pyproject.toml``'s import-linter contract)."""
