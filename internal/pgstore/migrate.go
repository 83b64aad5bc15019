package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// migrations are the schema's versions, in order: migrations[i] takes the
// schema from version i to i+1. Released ones never change; a new version
// appends one.
var migrations = []string{
	// 1: questions, their change log, session records.
	`
CREATE TABLE questions (
	id          text PRIMARY KEY,
	record      json NOT NULL, -- pending.EncodeRecord; json keeps its bytes as written
	owner       text NOT NULL DEFAULT '',
	request_key text NOT NULL DEFAULT '',
	ended       boolean NOT NULL DEFAULT false,
	created_at  timestamptz NOT NULL,
	ended_at    timestamptz
);
-- One live question per agent and Idempotency-Key across the cluster.
CREATE UNIQUE INDEX questions_live_key ON questions (owner, request_key) WHERE request_key <> '' AND NOT ended;
CREATE INDEX questions_ended_at ON questions (ended_at) WHERE ended;

CREATE TABLE log_head (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	seq bigint NOT NULL
);
INSERT INTO log_head VALUES (true, 0);

CREATE TABLE changes (
	seq         bigint PRIMARY KEY,
	question_id text NOT NULL,
	kind        text NOT NULL CHECK (kind IN ('asked', 'ended')),
	at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sessions (
	id     text PRIMARY KEY,
	record json NOT NULL
);
`,
	// 2: cluster-wide limits on pending questions, kept as counters beside
	// the questions, and every change as one function call. Each change
	// locks, in this order, its question, the total, its owner's count and
	// the log head, so that two changes never wait for each other in a
	// circle.
	`
CREATE TABLE pending_total (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	n   bigint NOT NULL
);
INSERT INTO pending_total SELECT true, count(*) FROM questions WHERE NOT ended;
CREATE TABLE pending_owners (
	owner text PRIMARY KEY,
	n     bigint NOT NULL
);
INSERT INTO pending_owners SELECT owner, count(*) FROM questions WHERE NOT ended GROUP BY owner;

-- questiond_ask stores a new pending question and logs it; it returns the
-- change's number, or 0 when the id is taken. Beyond max_total pending
-- questions, or max_owner of the owner's (0: no limit), it fails with
-- SQLSTATE QD001 or QD002, changing nothing.
CREATE FUNCTION questiond_ask(p_id text, p_record json, p_owner text, p_key text, p_created timestamptz, max_total bigint, max_owner bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	s bigint;
BEGIN
	INSERT INTO questions (id, record, owner, request_key, created_at)
	VALUES (p_id, p_record, p_owner, p_key, p_created)
	ON CONFLICT (id) DO NOTHING;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	UPDATE pending_total SET n = n + 1 WHERE max_total <= 0 OR n < max_total;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'questiond holds % pending questions, its limit', max_total USING ERRCODE = 'QD001';
	END IF;
	INSERT INTO pending_owners AS o (owner, n) VALUES (p_owner, 1)
	ON CONFLICT (owner) DO UPDATE SET n = o.n + 1 WHERE max_owner <= 0 OR p_owner = '' OR o.n < max_owner;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'agent % has % pending questions, its limit', p_owner, max_owner USING ERRCODE = 'QD002';
	END IF;
	UPDATE log_head SET seq = seq + 1 RETURNING seq INTO s;
	INSERT INTO changes (seq, question_id, kind) VALUES (s, p_id, 'asked');
	PERFORM pg_notify('questiond_changes', s::text);
	RETURN s;
END $$;

-- questiond_end records the ending of a pending question and logs it; it
-- returns the change's number, or 0 when the question has already ended
-- (or is gone).
CREATE FUNCTION questiond_end(p_id text, p_record json, p_at timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	s bigint;
	who text;
BEGIN
	UPDATE questions SET record = p_record, ended = true, ended_at = p_at
	WHERE id = p_id AND NOT ended
	RETURNING owner INTO who;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	UPDATE pending_total SET n = n - 1;
	UPDATE pending_owners SET n = n - 1 WHERE owner = who;
	UPDATE log_head SET seq = seq + 1 RETURNING seq INTO s;
	INSERT INTO changes (seq, question_id, kind) VALUES (s, p_id, 'ended');
	PERFORM pg_notify('questiond_changes', s::text);
	RETURN s;
END $$;
`,
	// 3: when a keyed POST /elicit last attached to a question's wait, on
	// any replica, so that the replica its first caller left does not
	// withdraw a question whose retry went elsewhere.
	`
ALTER TABLE questions ADD COLUMN attached_at timestamptz;
`,
	// 4: webhook notifications not delivered yet, shared by the replicas.
	`
CREATE TABLE notify_outbox (
	key   text PRIMARY KEY,
	value bytea NOT NULL
);
`,
	// 5: changes commit side by side (see the package doc, "Gap-free
	// order"): numbers come from a sequence and each change records its
	// transaction's id, which orders the log; nothing notifies inside the
	// transaction (NOTIFY takes a cluster-wide lock until commit); the
	// pending total is split into stripes, each capped at its share of the
	// limit; the unauthenticated owner ('') is not counted.
	`
CREATE SEQUENCE changes_seq;
SELECT setval('changes_seq', greatest(seq, 1), seq > 0) FROM log_head;
DROP TABLE log_head;
ALTER TABLE changes ADD COLUMN xid bigint NOT NULL DEFAULT 0;
CREATE INDEX changes_xid ON changes (xid, seq);
-- The highest transaction id whose changes pruning may have deleted.
CREATE TABLE log_pruned (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	xid bigint NOT NULL
);
INSERT INTO log_pruned VALUES (true, 0);

CREATE TABLE pending_stripes (
	stripe int PRIMARY KEY,
	n      bigint NOT NULL
);
ALTER TABLE questions ADD COLUMN stripe int NOT NULL DEFAULT 0;
-- Spread what is pending round-robin, so that no stripe holds more than
-- its share of a limit the total is within.
UPDATE questions q SET stripe = r.i % 32
FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) - 1 AS i FROM questions WHERE NOT ended) r
WHERE q.id = r.id;
INSERT INTO pending_stripes SELECT s, (SELECT count(*) FROM questions WHERE NOT ended AND stripe = s) FROM generate_series(0, 31) s;
DROP TABLE pending_total;
DELETE FROM pending_owners WHERE owner = '';

-- questiond_stripe_cap is stripe s's share of a limit of max pending
-- questions over 32 stripes: they add up to max.
CREATE FUNCTION questiond_stripe_cap(s int, max bigint) RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT max / 32 + CASE WHEN s < max % 32 THEN 1 ELSE 0 END $$;

-- questiond_ask as in version 2, but it counts the question in one stripe
-- (the first with room, from one its id picks), logs it under a number of
-- the sequence and its transaction id, and does not notify.
CREATE OR REPLACE FUNCTION questiond_ask(p_id text, p_record json, p_owner text, p_key text, p_created timestamptz, max_total bigint, max_owner bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	s bigint;
	first int := abs(hashtext(p_id)) % 32;
	k int;
BEGIN
	INSERT INTO questions (id, record, owner, request_key, created_at)
	VALUES (p_id, p_record, p_owner, p_key, p_created)
	ON CONFLICT (id) DO NOTHING;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	FOR i IN 0..31 LOOP
		k := (first + i) % 32;
		UPDATE pending_stripes SET n = n + 1
		WHERE stripe = k AND (max_total <= 0 OR n < questiond_stripe_cap(k, max_total));
		EXIT WHEN FOUND;
		k := -1;
	END LOOP;
	IF k < 0 THEN
		RAISE EXCEPTION 'questiond holds % pending questions, its limit', max_total USING ERRCODE = 'QD001';
	END IF;
	UPDATE questions SET stripe = k WHERE id = p_id;
	IF p_owner <> '' THEN
		INSERT INTO pending_owners AS o (owner, n) VALUES (p_owner, 1)
		ON CONFLICT (owner) DO UPDATE SET n = o.n + 1 WHERE max_owner <= 0 OR o.n < max_owner;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'agent % has % pending questions, its limit', p_owner, max_owner USING ERRCODE = 'QD002';
		END IF;
	END IF;
	s := nextval('changes_seq');
	INSERT INTO changes (seq, question_id, kind, xid) VALUES (s, p_id, 'asked', pg_current_xact_id()::text::bigint);
	RETURN s;
END $$;

CREATE OR REPLACE FUNCTION questiond_end(p_id text, p_record json, p_at timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	s bigint;
	who text;
	k int;
BEGIN
	UPDATE questions SET record = p_record, ended = true, ended_at = p_at
	WHERE id = p_id AND NOT ended
	RETURNING owner, stripe INTO who, k;
	IF NOT FOUND THEN
		RETURN 0;
	END IF;
	UPDATE pending_stripes SET n = n - 1 WHERE stripe = k;
	IF who <> '' THEN
		UPDATE pending_owners SET n = n - 1 WHERE owner = who;
	END IF;
	s := nextval('changes_seq');
	INSERT INTO changes (seq, question_id, kind, xid) VALUES (s, p_id, 'ended', pg_current_xact_id()::text::bigint);
	RETURN s;
END $$;
`,
	// 6: each undelivered notification is held by one replica at a time,
	// under a lease it renews (see Outbox); a record nobody holds, as
	// every one written before, is free to claim at once.
	`
ALTER TABLE notify_outbox
	ADD COLUMN owner text NOT NULL DEFAULT '',
	ADD COLUMN lease_until timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX notify_outbox_owner ON notify_outbox (owner);
CREATE INDEX notify_outbox_lease_until ON notify_outbox (lease_until);
`,
	// 7: a replica's creations and endings in batches: one call, one
	// transaction, each item refused on its own (see Journal.Put). Every
	// batch takes its row locks in one order (the ended questions' rows by
	// id, then the agents' counters by owner, then the stripes from the
	// lowest), so that batches of different replicas do not deadlock; only
	// an ask that finds its stripes full near the limit wraps around.
	`
CREATE FUNCTION questiond_apply(p_ids text[], p_records text[], p_owners text[], p_keys text[], p_created timestamptz[], p_ended timestamptz[], max_total bigint, max_owner bigint)
RETURNS TABLE (out_item int, out_seq bigint, out_refused smallint) LANGUAGE plpgsql AS $$
DECLARE
	items int := coalesce(array_length(p_ids, 1), 0);
	-- 0 done; refused: 1 id or key taken, 2 total limit, 3 owner's limit, 4 not pending
	codes smallint[] := array_fill(0::smallint, ARRAY[items]);
	stripes int[] := array_fill(NULL::int, ARRAY[items]);
	owners text[] := p_owners;
	r record;
	k int;
	who text;
	s bigint;
BEGIN
	FOR r IN SELECT i FROM generate_subscripts(p_ids, 1) i WHERE p_ended[i] IS NOT NULL ORDER BY p_ids[i], i LOOP
		UPDATE questions SET record = p_records[r.i]::json, ended = true, ended_at = p_ended[r.i]
		WHERE id = p_ids[r.i] AND NOT ended
		RETURNING questions.owner, questions.stripe INTO who, k;
		IF FOUND THEN
			owners[r.i] := who;
			stripes[r.i] := k;
		ELSE
			codes[r.i] := 4;
		END IF;
	END LOOP;
	FOR r IN SELECT i FROM generate_subscripts(p_ids, 1) i WHERE codes[i] = 0 AND owners[i] <> ''
			ORDER BY owners[i], p_ended[i] IS NULL, i LOOP
		IF p_ended[r.i] IS NOT NULL THEN
			UPDATE pending_owners SET n = n - 1 WHERE owner = owners[r.i];
		ELSE
			INSERT INTO pending_owners AS o (owner, n) VALUES (owners[r.i], 1)
			ON CONFLICT (owner) DO UPDATE SET n = o.n + 1 WHERE max_owner <= 0 OR o.n < max_owner;
			IF NOT FOUND THEN
				codes[r.i] := 3;
			END IF;
		END IF;
	END LOOP;
	FOR r IN SELECT i, CASE WHEN p_ended[i] IS NULL THEN abs(hashtext(p_ids[i])) % 32 ELSE stripes[i] END AS st
			FROM generate_subscripts(p_ids, 1) i WHERE codes[i] = 0 ORDER BY 2, 1 LOOP
		IF p_ended[r.i] IS NOT NULL THEN
			UPDATE pending_stripes SET n = n - 1 WHERE stripe = r.st;
			CONTINUE;
		END IF;
		FOR j IN 0..31 LOOP
			k := (r.st + j) % 32;
			UPDATE pending_stripes SET n = n + 1
			WHERE stripe = k AND (max_total <= 0 OR n < questiond_stripe_cap(k, max_total));
			EXIT WHEN FOUND;
			k := -1;
		END LOOP;
		IF k < 0 THEN
			codes[r.i] := 2;
			IF owners[r.i] <> '' THEN
				UPDATE pending_owners SET n = n - 1 WHERE owner = owners[r.i];
			END IF;
		ELSE
			stripes[r.i] := k;
		END IF;
	END LOOP;
	FOR r IN SELECT i FROM generate_subscripts(p_ids, 1) i WHERE codes[i] = 0 AND p_ended[i] IS NULL ORDER BY i LOOP
		INSERT INTO questions (id, record, owner, request_key, created_at, stripe)
		VALUES (p_ids[r.i], p_records[r.i]::json, p_owners[r.i], p_keys[r.i], p_created[r.i], stripes[r.i])
		ON CONFLICT DO NOTHING;
		IF NOT FOUND THEN
			codes[r.i] := 1;
			UPDATE pending_stripes SET n = n - 1 WHERE stripe = stripes[r.i];
			IF p_owners[r.i] <> '' THEN
				UPDATE pending_owners SET n = n - 1 WHERE owner = p_owners[r.i];
			END IF;
		END IF;
	END LOOP;
	FOR i IN 1..items LOOP
		s := 0;
		IF codes[i] = 0 THEN
			s := nextval('changes_seq');
			INSERT INTO changes (seq, question_id, kind, xid)
			VALUES (s, p_ids[i], CASE WHEN p_ended[i] IS NULL THEN 'asked' ELSE 'ended' END, pg_current_xact_id()::text::bigint);
		END IF;
		out_item := i;
		out_seq := s;
		out_refused := codes[i];
		RETURN NEXT;
	END LOOP;
END $$;
`,
	// 8: the Idempotency-Keys of forgotten questions, remembered until a
	// time (see pending.GoneKey), shared by the replicas: a retry under one
	// of them is told its result is gone instead of asking again.
	`
CREATE TABLE gone_keys (
	owner        text NOT NULL,
	request_key  text NOT NULL,
	question_id  text NOT NULL,
	request_hash text NOT NULL,
	until        timestamptz NOT NULL,
	PRIMARY KEY (owner, request_key)
);
CREATE INDEX gone_keys_until ON gone_keys (until);
`,
	// 9: a forgetting is a change too ('forgot', logged with the deletion
	// of the question's record), so that every replica forgets the result
	// one of them evicted (a byte budget, a retention bound) and remembers
	// its Idempotency-Key as gone. Replicas of an older questiond skip it.
	`
ALTER TABLE changes DROP CONSTRAINT changes_kind_check;
ALTER TABLE changes ADD CONSTRAINT changes_kind_check CHECK (kind IN ('asked', 'ended', 'forgot'));
`,
	// 10: the byte budgets (pending.Options.MaxBytes, MaxBytesPerAgent) are
	// cluster-wide, kept as counters beside the questions: each question's
	// weight (pending.Weigh of its record; about its record's length for
	// those stored before), each agent's bytes in its pending_owners row,
	// the total in held_bytes. questiond_apply's new form checks and counts
	// them; questiond_forget subtracts what it deletes. A deletion made by
	// an older questiond during an upgrade is subtracted by a trigger.
	//
	// Lock order, as in version 7 with the total last: the ended questions'
	// rows by id, the agents' counters by owner, the stripes, held_bytes.
	// A creation that makes room by forgetting its agent's oldest results
	// deletes their rows after that (a concurrent deletion of the same
	// rows may deadlock with it: the batch is sent again).
	`
ALTER TABLE questions ADD COLUMN weight bigint NOT NULL DEFAULT 0;
UPDATE questions SET weight = 1024 + octet_length(record::text);
ALTER TABLE pending_owners ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
INSERT INTO pending_owners (owner, n) SELECT DISTINCT owner, 0 FROM questions WHERE owner <> '' ON CONFLICT DO NOTHING;
UPDATE pending_owners o SET bytes = coalesce((SELECT sum(weight) FROM questions q WHERE q.owner = o.owner), 0);
CREATE TABLE held_bytes (
	one boolean PRIMARY KEY DEFAULT true CHECK (one),
	n   bigint NOT NULL
);
INSERT INTO held_bytes SELECT true, coalesce(sum(weight), 0) FROM questions;

-- Deletions not counted by questiond_forget or questiond_apply (which set
-- questiond.counted in their transaction) are subtracted here.
CREATE FUNCTION questiond_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.weight <> 0 AND coalesce(current_setting('questiond.counted', true), '') <> 'on' THEN
		IF OLD.owner <> '' THEN
			UPDATE pending_owners SET bytes = bytes - OLD.weight WHERE owner = OLD.owner;
		END IF;
		UPDATE held_bytes SET n = n - OLD.weight;
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER questions_deleted AFTER DELETE ON questions FOR EACH ROW EXECUTE FUNCTION questiond_deleted();

-- questiond_forget deletes the records with p_ids, logs each one's
-- forgetting ('forgot') and subtracts their weights.
CREATE FUNCTION questiond_forget(p_ids text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r record;
	total bigint := 0;
BEGIN
	PERFORM set_config('questiond.counted', 'on', true);
	FOR r IN
		WITH gone AS (DELETE FROM questions WHERE id = ANY(p_ids) RETURNING id, owner, weight),
		logged AS (
			INSERT INTO changes (seq, question_id, kind, xid)
			SELECT nextval('changes_seq'), id, 'forgot', pg_current_xact_id()::text::bigint FROM gone
		)
		SELECT owner, sum(weight) AS w FROM gone GROUP BY owner ORDER BY owner
	LOOP
		IF r.owner <> '' THEN
			UPDATE pending_owners SET bytes = bytes - r.w WHERE owner = r.owner;
		END IF;
		total := total + r.w;
	END LOOP;
	IF total <> 0 THEN
		UPDATE held_bytes SET n = n - total;
	END IF;
	PERFORM set_config('questiond.counted', '', true);
END $$;

-- questiond_weigh sets a stored question's weight and counts the
-- difference, checking no budget: for records written several at once by
-- the one-change functions (a restore, an import).
CREATE FUNCTION questiond_weigh(p_id text, p_weight bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	who text;
	old bigint;
BEGIN
	SELECT owner, weight INTO who, old FROM questions WHERE id = p_id FOR UPDATE;
	IF who IS NULL OR old = p_weight THEN
		RETURN;
	END IF;
	UPDATE questions SET weight = p_weight WHERE id = p_id;
	IF who <> '' THEN
		INSERT INTO pending_owners AS o (owner, n, bytes) VALUES (who, 0, p_weight - old)
		ON CONFLICT (owner) DO UPDATE SET bytes = o.bytes + EXCLUDED.bytes;
	END IF;
	UPDATE held_bytes SET n = n + p_weight - old;
END $$;

-- questiond_forget_oldest forgets p_owner's oldest result (in ending
-- order) inside a creation's transaction, to make room for it: deletes
-- its record, logs its forgetting, remembers its Idempotency-Key until
-- p_until, and subtracts its weight from the agent's counter (the caller
-- holds its row); the caller subtracts it from the total. It returns the
-- weight, or NULL when the agent holds no result.
CREATE FUNCTION questiond_forget_oldest(p_owner text, p_until timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	v_id text;
	v_key text;
	v_hash text;
	w bigint;
BEGIN
	PERFORM set_config('questiond.counted', 'on', true);
	DELETE FROM questions WHERE id = (
		SELECT id FROM questions WHERE owner = p_owner AND ended ORDER BY ended_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
	) RETURNING id, request_key, coalesce(record->>'requestHash', ''), weight INTO v_id, v_key, v_hash, w;
	PERFORM set_config('questiond.counted', '', true);
	IF v_id IS NULL THEN
		RETURN NULL;
	END IF;
	INSERT INTO changes (seq, question_id, kind, xid) VALUES (nextval('changes_seq'), v_id, 'forgot', pg_current_xact_id()::text::bigint);
	IF v_key <> '' THEN
		INSERT INTO gone_keys AS g (owner, request_key, question_id, request_hash, until)
		VALUES (p_owner, v_key, v_id, v_hash, p_until)
		ON CONFLICT (owner, request_key) DO UPDATE SET question_id = EXCLUDED.question_id, request_hash = EXCLUDED.request_hash, until = EXCLUDED.until
		WHERE g.until < EXCLUDED.until;
	END IF;
	IF p_owner <> '' THEN
		UPDATE pending_owners SET bytes = bytes - w WHERE owner = p_owner;
	END IF;
	RETURN w;
END $$;

-- questiond_apply as in version 7, with each record's weight (p_weights),
-- the byte budgets (max_bytes, max_owner_bytes; 0: none) and how long the
-- key of a result forgotten to make room is remembered (p_gone_until).
-- More refusals: 5 the total byte budget, 6 the agent's (out_seq then
-- carries the bytes held). A creation beyond a byte budget first forgets
-- its agent's oldest results if that makes room, as a replica's store
-- does, and is refused otherwise, forgetting nothing.
CREATE FUNCTION questiond_apply(p_ids text[], p_records text[], p_owners text[], p_keys text[], p_created timestamptz[], p_ended timestamptz[], max_total bigint, max_owner bigint,
	p_weights bigint[], max_bytes bigint, max_owner_bytes bigint, p_gone_until timestamptz)
RETURNS TABLE (out_item int, out_seq bigint, out_refused smallint) LANGUAGE plpgsql AS $$
DECLARE
	items int := coalesce(array_length(p_ids, 1), 0);
	codes smallint[] := array_fill(0::smallint, ARRAY[items]);
	stripes int[] := array_fill(NULL::int, ARRAY[items]);
	deltas bigint[] := array_fill(0::bigint, ARRAY[items]);
	held bigint[] := array_fill(0::bigint, ARRAY[items]);
	owners text[] := p_owners;
	r record;
	k int;
	who text;
	old bigint;
	s bigint;
	cn bigint;
	cb bigint;
	reclaim bigint;
	freed bigint := 0;
	w bigint;
	total bigint;
BEGIN
	FOR r IN SELECT i FROM generate_subscripts(p_ids, 1) i WHERE p_ended[i] IS NOT NULL ORDER BY p_ids[i], i LOOP
		SELECT q.weight INTO old FROM questions q WHERE q.id = p_ids[r.i] AND NOT q.ended FOR UPDATE;
		UPDATE questions SET record = p_records[r.i]::json, ended = true, ended_at = p_ended[r.i], weight = p_weights[r.i]
		WHERE id = p_ids[r.i] AND NOT ended
		RETURNING questions.owner, questions.stripe INTO who, k;
		IF FOUND THEN
			owners[r.i] := who;
			stripes[r.i] := k;
			deltas[r.i] := p_weights[r.i] - old;
		ELSE
			codes[r.i] := 4;
		END IF;
	END LOOP;
	FOR r IN SELECT i FROM generate_subscripts(p_ids, 1) i WHERE codes[i] = 0 AND owners[i] <> ''
			ORDER BY owners[i], p_ended[i] IS NULL, i LOOP
		IF p_ended[r.i] IS NOT NULL THEN
			UPDATE pending_owners SET n = n - 1, bytes = bytes + deltas[r.i] WHERE owner = owners[r.i];
			CONTINUE;
		END IF;
		INSERT INTO pending_owners (owner, n) VALUES (owners[r.i], 0) ON CONFLICT DO NOTHING;
		SELECT o.n, o.bytes INTO cn, cb FROM pending_owners o WHERE o.owner = owners[r.i] FOR UPDATE;
		IF max_owner > 0 AND cn >= max_owner THEN
			codes[r.i] := 3;
			CONTINUE;
		END IF;
		IF max_owner_bytes > 0 AND cb + p_weights[r.i] > max_owner_bytes THEN
			SELECT coalesce(sum(q.weight), 0) INTO reclaim FROM questions q WHERE q.owner = owners[r.i] AND q.ended;
			IF cb - reclaim + p_weights[r.i] > max_owner_bytes THEN
				codes[r.i] := 6;
				held[r.i] := cb;
				CONTINUE;
			END IF;
			WHILE cb + p_weights[r.i] > max_owner_bytes LOOP
				w := questiond_forget_oldest(owners[r.i], p_gone_until);
				EXIT WHEN w IS NULL;
				cb := cb - w;
				freed := freed + w;
			END LOOP;
			IF cb + p_weights[r.i] > max_owner_bytes THEN
				-- A result it counted on is being deleted by another
				-- transaction (a replica's sweep): the batch is sent again,
				-- and then finds it gone and counted.
				RAISE EXCEPTION 'a result to forget is being deleted elsewhere' USING ERRCODE = '40001';
			END IF;
		END IF;
		UPDATE pending_owners SET n = n + 1, bytes = bytes + p_weights[r.i] WHERE owner = owners[r.i];
	END LOOP;
	FOR r IN SELECT i, CASE WHEN p_ended[i] IS NULL THEN abs(hashtext(p_ids[i])) % 32 ELSE stripes[i] END AS st
			FROM generate_subscripts(p_ids, 1) i WHERE codes[i] = 0 ORDER BY 2, 1 LOOP
		IF p_ended[r.i] IS NOT NULL THEN
			UPDATE pending_stripes SET n = n - 1 WHERE stripe = r.st;
			CONTINUE;
		END IF;
		FOR j IN 0..31 LOOP
			k := (r.st + j) % 32;
			UPDATE pending_stripes SET n = n + 1
			WHERE stripe = k AND (max_total <= 0 OR n < questiond_stripe_cap(k, max_total));
			EXIT WHEN FOUND;
			k := -1;
		END LOOP;
		IF k < 0 THEN
			codes[r.i] := 2;
			IF owners[r.i] <> '' THEN
				UPDATE pending_owners SET n = n - 1, bytes = bytes - p_weights[r.i] WHERE owner = owners[r.i];
			END IF;
		ELSE
			stripes[r.i] := k;
		END IF;
	END LOOP;
	-- The total, last: what the endings changed, what was forgotten, then
	-- each creation in turn.
	SELECT h.n INTO total FROM held_bytes h FOR UPDATE;
	total := total - freed;
	FOR i IN 1..items LOOP
		IF codes[i] = 0 AND p_ended[i] IS NOT NULL THEN
			total := total + deltas[i];
		END IF;
	END LOOP;
	FOR i IN 1..items LOOP
		CONTINUE WHEN codes[i] <> 0 OR p_ended[i] IS NOT NULL;
		IF max_bytes > 0 AND total + p_weights[i] > max_bytes THEN
			SELECT coalesce(sum(q.weight), 0) INTO reclaim FROM questions q WHERE q.owner = owners[i] AND q.ended;
			IF total - reclaim + p_weights[i] > max_bytes THEN
				codes[i] := 5;
				held[i] := total;
				UPDATE pending_stripes SET n = n - 1 WHERE stripe = stripes[i];
				IF owners[i] <> '' THEN
					UPDATE pending_owners SET n = n - 1, bytes = bytes - p_weights[i] WHERE owner = owners[i];
				END IF;
				CONTINUE;
			END IF;
			WHILE total + p_weights[i] > max_bytes LOOP
				w := questiond_forget_oldest(owners[i], p_gone_until);
				EXIT WHEN w IS NULL;
				total := total - w;
			END LOOP;
			IF total + p_weights[i] > max_bytes THEN
				RAISE EXCEPTION 'a result to forget is being deleted elsewhere' USING ERRCODE = '40001';
			END IF;
		END IF;
		total := total + p_weights[i];
	END LOOP;
	UPDATE held_bytes SET n = total;
	FOR r IN SELECT i FROM generate_subscripts(p_ids, 1) i WHERE codes[i] = 0 AND p_ended[i] IS NULL ORDER BY i LOOP
		INSERT INTO questions (id, record, owner, request_key, created_at, stripe, weight)
		VALUES (p_ids[r.i], p_records[r.i]::json, p_owners[r.i], p_keys[r.i], p_created[r.i], stripes[r.i], p_weights[r.i])
		ON CONFLICT DO NOTHING;
		IF NOT FOUND THEN
			codes[r.i] := 1;
			UPDATE pending_stripes SET n = n - 1 WHERE stripe = stripes[r.i];
			IF p_owners[r.i] <> '' THEN
				UPDATE pending_owners SET n = n - 1, bytes = bytes - p_weights[r.i] WHERE owner = p_owners[r.i];
			END IF;
			UPDATE held_bytes SET n = n - p_weights[r.i];
		END IF;
	END LOOP;
	FOR i IN 1..items LOOP
		s := 0;
		IF codes[i] = 0 THEN
			s := nextval('changes_seq');
			INSERT INTO changes (seq, question_id, kind, xid)
			VALUES (s, p_ids[i], CASE WHEN p_ended[i] IS NULL THEN 'asked' ELSE 'ended' END, pg_current_xact_id()::text::bigint);
		ELSIF codes[i] IN (5, 6) THEN
			s := held[i];
		END IF;
		out_item := i;
		out_seq := s;
		out_refused := codes[i];
		RETURN NEXT;
	END LOOP;
END $$;
`,
}

// SchemaVersion is the schema version this build writes.
var SchemaVersion = len(migrations)

// ErrNewerSchema says the database was written by a newer questiond; it is
// left as it is.
var ErrNewerSchema = errors.New("the database schema is newer than this questiond")

// migrationLock is the advisory lock key replicas take while migrating, so
// that several starting at once migrate once ("qd15" as a number).
const migrationLock = 0x71643135

// migrate brings the schema to SchemaVersion, each step in its own
// transaction, under a session advisory lock.
func (s *DB) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable("connecting to migrate the schema", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return unavailable("locking the schema", err)
	}
	defer func() {
		// A lost connection releases the lock by itself.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock)
	}()
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS questiond_schema (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL)"); err != nil {
		return unavailable("creating the schema version table", err)
	}
	var version int
	err = conn.QueryRow(ctx, "SELECT version FROM questiond_schema").Scan(&version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		version = 0
	case err != nil:
		return unavailable("reading the schema version", err)
	}
	if version > SchemaVersion {
		return fmt.Errorf("%w: the database is at version %d, this questiond knows versions up to %d; upgrade questiond", ErrNewerSchema, version, SchemaVersion)
	}
	for v := version; v < SchemaVersion; v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO questiond_schema (version) VALUES ($1) ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version", v+1)
			return err
		})
		if err != nil {
			return unavailable(fmt.Sprintf("migrating the schema to version %d", v+1), err)
		}
		s.log.Info("database schema migrated", zap.Int("version", v+1))
	}
	return nil
}
