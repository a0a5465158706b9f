-- 0008_drop_claim_index.sql - drop ops_claim_idx.
--
-- 0001 indexed a vshard's PENDING ops in dispatch order for a claim that
-- read ops directly. The claim of 0004 reads lanes and then one signer's
-- range of ops_signer_pending_idx, so nothing reads ops_claim_idx any more,
-- while every enqueue and every status change still pays for its entries,
-- and a cached plan once chose it for a lane lookup and scanned every
-- PENDING op per call (0005 pins those lookups to the signer index).
DROP INDEX outbox.ops_claim_idx;
