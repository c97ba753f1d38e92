-- The peer's table: what a team building the vault on PostgreSQL would keep per card.
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE TABLE vault_cards (
    token bytea PRIMARY KEY,
    fingerprint bytea NOT NULL,
    sealed bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vault_cards_fingerprint ON vault_cards (fingerprint);
