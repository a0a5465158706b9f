-- 0001_schema.sql - the outbox schema: settings, validators, tables, indexes.
--
-- Applied by `outboxctl migrate` (common/migrate.c) inside one transaction,
-- with the session setting outbox.vshards set from OUTBOX_VSHARDS (empty when
-- unset, then the default 64 applies). Never edit a migration once it has been
-- applied anywhere: migrate refuses a changed checksum. Add a new file instead.
--
-- Conventions: every enum is text (or smallint for priority) with a CHECK;
-- every length and range is bounded by a CHECK; timestamps are timestamptz;
-- Stellar times that are compared with ledger close times (attempts.max_time)
-- are bigint unix seconds, exactly as the XDR TimePoint and the RPC's
-- latestLedgerCloseTime carry them, so no time zone or rounding ever enters.

CREATE SCHEMA IF NOT EXISTS outbox;

-- One row, fixed at the first migrate. The vshard count decides which worker
-- owns which signer; changing it would move signers between shards while
-- their transactions are in flight, so it is immutable (trigger below) and a
-- later migrate with another OUTBOX_VSHARDS fails (checked in migrate.c).
CREATE TABLE outbox.settings (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	vshards integer NOT NULL CHECK (vshards BETWEEN 1 AND 4096),
	created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO outbox.settings (vshards)
VALUES (coalesce(nullif(current_setting('outbox.vshards', true), '')::integer, 64));

CREATE FUNCTION outbox.settings_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'outbox.settings is fixed for a deployment (vshards cannot change)'
		USING ERRCODE = 'OB409';
END
$$;

CREATE TRIGGER settings_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON outbox.settings
	FOR EACH STATEMENT EXECUTE FUNCTION outbox.settings_immutable();

-- Priorities are stored as smallint so the claim index sorts them in
-- dispatch order: 0 = CRITICAL, 1 = NORMAL, 2 = LOW. (Small SQL functions
-- are deliberately not STRICT: PostgreSQL inlines a STRICT function only
-- when its body is provably strict, which CASE is not, and a call that is
-- not inlined costs tens of microseconds.)
CREATE FUNCTION outbox.priority_name(p smallint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE p WHEN 0 THEN 'CRITICAL' WHEN 1 THEN 'NORMAL' WHEN 2 THEN 'LOW' END
$$;

CREATE FUNCTION outbox.priority_rank(name text) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE name WHEN 'CRITICAL' THEN 0 WHEN 'NORMAL' THEN 1 WHEN 'LOW' THEN 2 END::smallint
$$;

-- A value quoted for an error message: at most 80 characters, control
-- characters replaced, so a hostile input can neither flood a log line nor
-- split it.
CREATE FUNCTION outbox.quote_value(v text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN v IS NULL THEN 'NULL'
		ELSE '''' || regexp_replace(left(v, 80), '[[:cntrl:]]', '?', 'g')
			|| CASE WHEN length(v) > 80 THEN '...' ELSE '' END || ''''
	END
$$;

-- What is wrong with an account StrKey (G...), or NULL when it is valid.
-- Full decoding as stellar-protocol.md section 3 requires: 56 characters of
-- the RFC 4648 base32 alphabet without padding (56 * 5 = 280 bits = 35 bytes
-- exactly, so no spare bits exist and every such string is canonical),
-- version byte 6 << 3 = 0x30, then 32 key bytes, then CRC16-XModem over
-- version + key, low byte first.
CREATE FUNCTION outbox.account_strkey_problem(v text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
	crc_table constant integer[] := '{0,4129,8258,12387,16516,20645,24774,28903,33032,37161,41290,45419,49548,53677,57806,61935,4657,528,12915,8786,21173,17044,29431,25302,37689,33560,45947,41818,54205,50076,62463,58334,9314,13379,1056,5121,25830,29895,17572,21637,42346,46411,34088,38153,58862,62927,50604,54669,13907,9842,5649,1584,30423,26358,22165,18100,46939,42874,38681,34616,63455,59390,55197,51132,18628,22757,26758,30887,2112,6241,10242,14371,51660,55789,59790,63919,35144,39273,43274,47403,23285,19156,31415,27286,6769,2640,14899,10770,56317,52188,64447,60318,39801,35672,47931,43802,27814,31879,19684,23749,11298,15363,3168,7233,60846,64911,52716,56781,44330,48395,36200,40265,32407,28342,24277,20212,15891,11826,7761,3696,65439,61374,57309,53244,48923,44858,40793,36728,37256,33193,45514,41451,53516,49453,61774,57711,4224,161,12482,8419,20484,16421,28742,24679,33721,37784,41979,46042,49981,54044,58239,62302,689,4752,8947,13010,16949,21012,25207,29270,46570,42443,38312,34185,62830,58703,54572,50445,13538,9411,5280,1153,29798,25671,21540,17413,42971,47098,34713,38840,59231,63358,50973,55100,9939,14066,1681,5808,26199,30326,17941,22068,55628,51565,63758,59695,39368,35305,47498,43435,22596,18533,30726,26663,6336,2273,14466,10403,52093,56156,60223,64286,35833,39896,43963,48026,19061,23124,27191,31254,2801,6864,10931,14994,64814,60687,56684,52557,48554,44427,40424,36297,31782,27655,23652,19525,15522,11395,7392,3265,61215,65342,53085,57212,44955,49082,36825,40952,28183,32310,20053,24180,11923,16050,3793,7920}';
	d bytea;
	acc bigint;
	o integer;
	x integer;
	crc integer := 0;
BEGIN
	IF v IS NULL THEN
		RETURN 'is missing';
	END IF;
	IF length(v) <> 56 THEN
		RETURN 'is not a 56-character account strkey (G...)';
	END IF;
	IF v !~ '^[A-Z2-7]+$' THEN
		RETURN 'contains characters outside the base32 alphabet A-Z2-7';
	END IF;
	-- Map each base32 digit to the byte 32 + its value, then decode 8
	-- characters (40 bits, 5 bytes) per step and feed the bytes to the CRC
	-- as they come: PL/pgSQL statements, not arithmetic, are what costs here.
	d := convert_to(translate(v, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567',
		' !"#$%&''()*+,-./0123456789:;<=>?'), 'SQL_ASCII');
	FOR g IN 0..6 LOOP
		o := g * 8;
		acc := ((get_byte(d, o) - 32)::bigint << 35) | ((get_byte(d, o + 1) - 32)::bigint << 30)
			| ((get_byte(d, o + 2) - 32)::bigint << 25) | ((get_byte(d, o + 3) - 32)::bigint << 20)
			| ((get_byte(d, o + 4) - 32)::bigint << 15) | ((get_byte(d, o + 5) - 32)::bigint << 10)
			| ((get_byte(d, o + 6) - 32)::bigint << 5) | (get_byte(d, o + 7) - 32)::bigint;
		IF g = 0 AND (acc >> 32) <> 48 THEN
			x := acc >> 32;
			RETURN CASE x
				WHEN 144 THEN 'is a secret seed (S...), not an account (G...)'
				WHEN 16 THEN 'is a contract id (C...), not an account (G...)'
				ELSE 'has version byte ' || x || ', not 48 (an account, G...)'
			END;
		END IF;
		-- bytes 1..33 (version + key) are checksummed; 34..35 are the checksum
		crc := ((crc << 8) & 65535) # crc_table[(((crc >> 8) # (acc >> 32)) & 255) + 1];
		crc := ((crc << 8) & 65535) # crc_table[(((crc >> 8) # (acc >> 24)) & 255) + 1];
		crc := ((crc << 8) & 65535) # crc_table[(((crc >> 8) # (acc >> 16)) & 255) + 1];
		EXIT WHEN g = 6;
		crc := ((crc << 8) & 65535) # crc_table[(((crc >> 8) # (acc >> 8)) & 255) + 1];
		crc := ((crc << 8) & 65535) # crc_table[(((crc >> 8) # acc) & 255) + 1];
	END LOOP;
	IF (acc & 65535) <> (((crc & 255) << 8) | (crc >> 8)) THEN
		RETURN 'has a bad checksum';
	END IF;
	RETURN NULL;
END
$$;

CREATE FUNCTION outbox.is_account_strkey(v text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT v IS NOT NULL AND outbox.account_strkey_problem(v) IS NULL
$$;

-- What is wrong with an amount of stroops, or NULL when it is valid: a
-- decimal string, digits only, no sign, no leading zero, positive, at most
-- the i128 maximum the vault contract accepts.
CREATE FUNCTION outbox.amount_problem(v text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
		WHEN v IS NULL THEN 'is missing'
		WHEN v = '' THEN 'is empty'
		WHEN length(v) > 39 THEN 'exceeds the i128 maximum 170141183460469231731687303715884105727'
		WHEN v !~ '^[0-9]+$' THEN 'is not a decimal string of stroops (digits only, no sign)'
		WHEN v ~ '^0+$' THEN 'is not positive'
		WHEN v ~ '^0' THEN 'has a leading zero'
		WHEN v::numeric > 170141183460469231731687303715884105727
			THEN 'exceeds the i128 maximum 170141183460469231731687303715884105727'
	END
$$;

-- Identifier pieces of an idempotency key: 1..128 characters, no control
-- characters. Callers add "no ':'" where a piece is not the key's last part.
CREATE FUNCTION outbox.ident_problem(v text, colon_ok boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
		WHEN v IS NULL THEN 'is missing'
		WHEN v = '' THEN 'is empty'
		WHEN length(v) > 128 THEN 'is longer than 128 characters'
		WHEN v ~ '[[:cntrl:]]' THEN 'contains a control character'
		WHEN NOT colon_ok AND strpos(v, ':') > 0
			THEN 'contains '':'' (it would make the idempotency key ambiguous)'
	END
$$;

-- The operations. Hot-path notes:
--  * fillfactor 80 leaves room on each page so an UPDATE can put the new row
--    version on the same page; when no indexed column changes the update is
--    HOT (no index entries written). Updates of attempts, fee_bumps,
--    last_error, updated_at, tx_hash, confirmed_at are HOT-eligible. A status
--    change is not: status is in the claim index's predicate, and
--    next_attempt_at is one of its keys, and PostgreSQL disables HOT when any
--    indexed column (keys, INCLUDE or predicate) changes. That is the price of
--    an index-only claim; the free space still keeps the new version on the
--    same heap page most of the time, which keeps the table compact.
--  * id is INCLUDEd in the claim index so a claim never visits the heap to
--    find candidates (visibility map permitting: keep autovacuum aggressive).
CREATE TABLE outbox.ops (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	idempotency_key text NOT NULL UNIQUE CHECK (length(idempotency_key) BETWEEN 5 AND 420),
	kind text NOT NULL CHECK (kind IN ('DEPOSIT', 'WITHDRAW', 'REBALANCE', 'REFERRAL_REWARD')),
	priority smallint NOT NULL CHECK (priority BETWEEN 0 AND 2),
	status text NOT NULL DEFAULT 'PENDING'
		CHECK (status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED')),
	user_id text NOT NULL CHECK (outbox.ident_problem(user_id, false) IS NULL),
	business_record_id text NOT NULL
		CHECK (length(business_record_id) BETWEEN 1 AND 257
			AND business_record_id !~ '[[:cntrl:]]'),
	signer text NOT NULL CHECK (signer ~ '^G[A-Z2-7]{55}$'),
	vshard integer NOT NULL CHECK (vshard BETWEEN 0 AND 4095),
	payload jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
	attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
	fee_bumps integer NOT NULL DEFAULT 0 CHECK (fee_bumps >= 0),
	next_attempt_at timestamptz NOT NULL DEFAULT now(),
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now(),
	confirmed_at timestamptz CHECK (confirmed_at IS NULL OR status = 'CONFIRMED'),
	last_error text CHECK (length(last_error) <= 2000),
	tx_hash text CHECK (tx_hash ~ '^[0-9a-f]{64}$'),
	CHECK (idempotency_key = kind || ':' || user_id || ':' || business_record_id)
) WITH (fillfactor = 80);

-- The claim index: PENDING work of a worker's vshards, in dispatch order.
-- A fresh op has next_attempt_at = created_at, so the intended claim, per
-- owned vshard,
--	SELECT id FROM outbox.ops
--	WHERE vshard = $1 AND status = 'PENDING' AND next_attempt_at <= now()
--	ORDER BY priority, next_attempt_at, created_at LIMIT n
-- (or one probe per priority with "AND priority = $2") reads the index in
-- order and stops after n entries, whatever the backlog: an Index Only Scan
-- without a Sort (tests/integration/check_enqueue.c checks the plan behind
-- 200 000 queued rows). "vshard = ANY(...)" over several shards would need a
-- sort: probe shard by shard instead.
CREATE INDEX ops_claim_idx ON outbox.ops (vshard, priority, next_attempt_at, created_at)
	INCLUDE (id) WHERE status = 'PENDING';

-- SUBMITTED work per vshard, for a worker that takes over a shard (or
-- restarts) and must reconcile what its predecessor had in flight.
CREATE INDEX ops_submitted_idx ON outbox.ops (vshard, updated_at)
	INCLUDE (id) WHERE status = 'SUBMITTED';

-- Every signed envelope, written (and committed) before its bytes go to the
-- network. bump_no 0 is the inner transaction itself; bump_no > 0 is a
-- fee-bump envelope around that same inner transaction (same inner hash, so
-- at most one of them can execute). max_time is the inner transaction's
-- timebounds maxTime in unix seconds (fee bumps have no bounds of their own).
CREATE TABLE outbox.attempts (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	op_id bigint NOT NULL REFERENCES outbox.ops (id),
	attempt_no integer NOT NULL CHECK (attempt_no >= 1),
	bump_no integer NOT NULL DEFAULT 0 CHECK (bump_no >= 0),
	tx_hash text NOT NULL UNIQUE CHECK (tx_hash ~ '^[0-9a-f]{64}$'),
	inner_tx_hash text NOT NULL CHECK (inner_tx_hash ~ '^[0-9a-f]{64}$'),
	envelope_xdr text NOT NULL
		CHECK (length(envelope_xdr) BETWEEN 4 AND 1000000
			AND envelope_xdr ~ '^[A-Za-z0-9+/]+={0,2}$' AND length(envelope_xdr) % 4 = 0),
	source_account text NOT NULL CHECK (source_account ~ '^G[A-Z2-7]{55}$'),
	source_sequence bigint NOT NULL CHECK (source_sequence > 0),
	max_time bigint NOT NULL CHECK (max_time > 0),
	fee bigint NOT NULL CHECK (fee > 0),
	submitted_at timestamptz NOT NULL DEFAULT now(),
	outcome text NOT NULL DEFAULT 'LIVE'
		CHECK (outcome IN ('LIVE', 'CONFIRMED', 'FAILED', 'EXPIRED', 'REJECTED')),
	result_code text CHECK (length(result_code) BETWEEN 1 AND 64),
	decided_at timestamptz,
	UNIQUE (op_id, attempt_no, bump_no),
	CHECK (bump_no > 0 OR inner_tx_hash = tx_hash),
	CHECK ((outcome = 'LIVE') = (decided_at IS NULL))
);

-- The database, not the worker, guarantees one live inner transaction per op:
-- a new inner transaction can be inserted only after the previous one has
-- been decided (EXPIRED proven, REJECTED, ...).
CREATE UNIQUE INDEX attempts_one_live_inner ON outbox.attempts (op_id)
	WHERE outcome = 'LIVE' AND bump_no = 0;
CREATE INDEX attempts_inner_hash_idx ON outbox.attempts (inner_tx_hash);

-- State transitions, relayed to Kafka at least once. seq numbers each op's
-- events from 1 without gaps (consumers detect loss by gaps). type is free
-- UPPER_SNAKE text so later issues add event types without a migration.
CREATE TABLE outbox.events (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	op_id bigint NOT NULL REFERENCES outbox.ops (id),
	seq integer NOT NULL CHECK (seq >= 1),
	type text NOT NULL CHECK (type ~ '^[A-Z][A-Z_]{0,47}$'),
	from_status text CHECK (from_status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED')),
	to_status text CHECK (to_status IN ('PENDING', 'SUBMITTED', 'CONFIRMED', 'FAILED', 'CANCELLED')),
	at timestamptz NOT NULL DEFAULT now(),
	body jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(body) = 'object'),
	published_at timestamptz,
	UNIQUE (op_id, seq)
);

-- The relay's work list: small, because published rows leave it.
CREATE INDEX events_unpublished_idx ON outbox.events (id) WHERE published_at IS NULL;

-- Virtual shard leases: a worker owns a vshard while expires_at is in the
-- future; every takeover increments epoch, and claims and finalizing updates
-- check it (fencing), so a worker that lost its lease cannot write.
CREATE TABLE outbox.shard_leases (
	vshard integer PRIMARY KEY CHECK (vshard BETWEEN 0 AND 4095),
	owner text NOT NULL CHECK (length(owner) BETWEEN 1 AND 128),
	epoch bigint NOT NULL CHECK (epoch >= 1),
	expires_at timestamptz NOT NULL
);

-- Compliance halts: ops of a held user are skipped by every sweep.
CREATE TABLE outbox.user_holds (
	user_id text PRIMARY KEY CHECK (outbox.ident_problem(user_id, false) IS NULL),
	reason text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
	held_at timestamptz NOT NULL DEFAULT now(),
	held_by text NOT NULL CHECK (length(held_by) BETWEEN 1 AND 128)
);

-- Admin API keys, stored hashed (32-byte digest, never the key).
CREATE TABLE outbox.admin_keys (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64 AND name !~ '[[:cntrl:]]'),
	key_hash bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
	scopes text[] NOT NULL
		CHECK (cardinality(scopes) >= 1 AND array_ndims(scopes) = 1
			AND scopes <@ ARRAY['outbox:read', 'outbox:write']::text[]),
	created_at timestamptz NOT NULL DEFAULT now(),
	revoked_at timestamptz CHECK (revoked_at IS NULL OR revoked_at >= created_at)
);

-- Who did what: append-only (trigger below).
CREATE TABLE outbox.audit_log (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at timestamptz NOT NULL DEFAULT now(),
	actor text NOT NULL CHECK (length(actor) BETWEEN 1 AND 128),
	action text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_.:-]{0,63}$'),
	target text CHECK (length(target) <= 256),
	detail jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object')
);
CREATE INDEX audit_log_at_idx ON outbox.audit_log (at);

CREATE FUNCTION outbox.audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'outbox.audit_log is append-only' USING ERRCODE = 'OB409';
END
$$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON outbox.audit_log
	FOR EACH STATEMENT EXECUTE FUNCTION outbox.audit_log_append_only();
