-- 0011: the requests recorded before their issuer was seen (without their ACME server), found
-- quickly when the issuer shows up: each issuer seen fills in its requests' server, so that
-- every issuance counts in the Let's Encrypt budgets whatever order things were seen in.
-- Rows stored before this change are filled in the same way once their issuers are listed,
-- at the next start.
CREATE INDEX certificate_requests_without_server ON certificate_requests (cluster, issuer_name) WHERE acme_server IS NULL;
