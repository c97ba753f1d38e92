-- The `peer` suite's work for PostgreSQL + pgcrypto, run by pgbench (prepared statements):
-- a random 16-byte token, an HMAC-SHA256 fingerprint of the PAN under a fingerprint key, and the
-- 100-byte card record encrypted with pgp_sym_encrypt (AES-256, OpenPGP with its MDC integrity
-- check; s2k-mode=1 so the key is hashed once rather than 65,536 times), inserted with
-- synchronous_commit on (the server is started with it). :fkey (hex) and :dkey come from -D.
\set n random(10, 73)
INSERT INTO vault_cards (token, fingerprint, sealed)
SELECT gen_random_bytes(16),
       hmac(convert_to(c.pan, 'UTF8'), decode(:fkey, 'hex'), 'sha256'),
       pgp_sym_encrypt(c.record, :dkey, 'cipher-algo=aes256, s2k-mode=1, compress-algo=0')
FROM (SELECT '49701000000000' || :n AS pan,
             '{"pan":"49701000000000' || :n || '","exp":"1229","holder":"A SHOPPER","client":"merchant-0001","v":1}         '
             AS record) AS c;
