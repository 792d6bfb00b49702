-- PGMQ compatibility layer: a local and test stand-in for the PGMQ extension.
--
-- Never deployed and never part of supabase/migrations. Production uses the real extension
-- (`create extension pgmq`, 1.5+). This file exists because PGMQ cannot be installed on the
-- machines that run local development, the test suite and the embedded demo; it is loaded only
-- when the `pgmq` schema is absent and the extension is not available.
--
-- It mirrors the documented PGMQ 1.5 API and table layout, with the same signatures, return types
-- and semantics, for the functions Switchyard relies on:
--   create, create_non_partitioned, create_unlogged, drop_queue, send (all 1.5 overloads),
--   send_batch (all 1.5 overloads), read, read_with_poll, pop, set_vt, archive (single and
--   array), delete (single and array), purge_queue, metrics, metrics_all, list_queues,
--   format_table_name (the kit names queue tables through it, as PGMQ's functions do),
--   and the pgmq.meta table, the pgmq.q_<queue> / pgmq.a_<queue> tables and the
--   message_record, queue_record and metrics_result types.
-- Partitioned queues (pg_partman) and extension-membership helpers are not mirrored.
--
-- Safe to load more than once, and into a database where the `pgmq` schema does not exist yet.
-- It refuses to load over the real extension. It opens no transaction of its own, so a loader
-- may wrap it in one.

DO $guard$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'pgmq') THEN
    RAISE EXCEPTION 'the pgmq extension is installed in this database; '
      'the PGMQ compatibility layer (pgmq_compat/pgmq.sql) must not be loaded over it';
  END IF;
END
$guard$;

CREATE SCHEMA IF NOT EXISTS pgmq;

------------------------------------------------------------
-- Tables and types
------------------------------------------------------------

-- One row per queue, keeping the queue name exactly as it was spelled at creation.
CREATE TABLE IF NOT EXISTS pgmq.meta (
  queue_name VARCHAR UNIQUE NOT NULL,
  is_partitioned BOOLEAN NOT NULL,
  is_unlogged BOOLEAN NOT NULL,
  created_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL
);

DO $types$
BEGIN
  IF to_regtype('pgmq.message_record') IS NULL THEN
    CREATE TYPE pgmq.message_record AS (
      msg_id BIGINT,
      read_ct INTEGER,
      enqueued_at TIMESTAMP WITH TIME ZONE,
      vt TIMESTAMP WITH TIME ZONE,
      message JSONB,
      headers JSONB
    );
  END IF;

  IF to_regtype('pgmq.queue_record') IS NULL THEN
    CREATE TYPE pgmq.queue_record AS (
      queue_name VARCHAR,
      is_partitioned BOOLEAN,
      is_unlogged BOOLEAN,
      created_at TIMESTAMP WITH TIME ZONE
    );
  END IF;

  IF to_regtype('pgmq.metrics_result') IS NULL THEN
    CREATE TYPE pgmq.metrics_result AS (
      queue_name TEXT,
      queue_length BIGINT,
      newest_msg_age_sec INT,
      oldest_msg_age_sec INT,
      total_messages BIGINT,
      scrape_time TIMESTAMP WITH TIME ZONE,
      queue_visible_length BIGINT
    );
  END IF;
END
$types$;

-- PGMQ lets pg_monitor read its tables; keep the same privileges.
GRANT USAGE ON SCHEMA pgmq TO pg_monitor;
GRANT SELECT ON ALL TABLES IN SCHEMA pgmq TO pg_monitor;
GRANT SELECT ON ALL SEQUENCES IN SCHEMA pgmq TO pg_monitor;
ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT SELECT ON TABLES TO pg_monitor;
ALTER DEFAULT PRIVILEGES IN SCHEMA pgmq GRANT SELECT ON SEQUENCES TO pg_monitor;

------------------------------------------------------------
-- Queue names
------------------------------------------------------------

-- Table name for a queue: '<prefix>_<lower(queue_name)>'. Every function goes through here, so
-- the characters PGMQ forbids are rejected everywhere, not only at creation.
CREATE OR REPLACE FUNCTION pgmq.format_table_name(queue_name TEXT, prefix TEXT)
RETURNS TEXT AS $$
BEGIN
  IF queue_name IS NULL THEN
    RAISE EXCEPTION 'queue name must not be null';
  END IF;
  IF queue_name ~ '[$;'']|--' THEN
    RAISE EXCEPTION USING
      MESSAGE = format(
        'invalid queue name "%s": queue name contains invalid characters: $, ;, --, or ''',
        queue_name
      ),
      HINT = 'Queue names may not contain $, ;, -- or a single quote.';
  END IF;
  RETURN lower(prefix || '_' || queue_name);
END;
$$ LANGUAGE plpgsql;

-- 47 characters keeps every identifier PGMQ derives from a queue name within PostgreSQL's
-- 63-byte limit.
CREATE OR REPLACE FUNCTION pgmq.validate_queue_name(queue_name TEXT)
RETURNS void AS $$
BEGIN
  IF length(queue_name) > 47 THEN
    RAISE EXCEPTION USING
      MESSAGE = format(
        'invalid queue name "%s": queue name is too long, maximum length is 47 characters (got %s)',
        queue_name,
        length(queue_name)
      );
  END IF;
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Creating and dropping queues
------------------------------------------------------------

-- Shared body of create_non_partitioned and create_unlogged. Idempotent: every object is created
-- only if missing, and a transaction-scoped advisory lock keyed on the table name serialises
-- concurrent creates of the same queue (CREATE ... IF NOT EXISTS alone can still race).
CREATE OR REPLACE FUNCTION pgmq._create_queue(queue_name TEXT, is_unlogged BOOLEAN)
RETURNS void AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  atable TEXT := pgmq.format_table_name(queue_name, 'a');
BEGIN
  PERFORM pgmq.validate_queue_name(queue_name);
  PERFORM pg_advisory_xact_lock(hashtext('pgmq.queue_' || qtable));

  EXECUTE format(
    $QUERY$
    CREATE %s TABLE IF NOT EXISTS pgmq.%I (
      msg_id BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
      read_ct INT DEFAULT 0 NOT NULL,
      enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
      vt TIMESTAMP WITH TIME ZONE NOT NULL,
      message JSONB,
      headers JSONB
    )
    $QUERY$,
    CASE WHEN is_unlogged THEN 'UNLOGGED' ELSE '' END,
    qtable
  );

  EXECUTE format(
    $QUERY$
    CREATE TABLE IF NOT EXISTS pgmq.%I (
      msg_id BIGINT PRIMARY KEY,
      read_ct INT DEFAULT 0 NOT NULL,
      enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
      archived_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
      vt TIMESTAMP WITH TIME ZONE NOT NULL,
      message JSONB,
      headers JSONB
    )
    $QUERY$,
    atable
  );

  EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (vt ASC)', qtable || '_vt_idx', qtable);
  EXECUTE format(
    'CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (archived_at)',
    'archived_at_idx_' || queue_name,
    atable
  );

  EXECUTE
    'INSERT INTO pgmq.meta (queue_name, is_partitioned, is_unlogged)
     VALUES ($1, false, $2)
     ON CONFLICT DO NOTHING'
  USING queue_name, is_unlogged;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.create_non_partitioned(queue_name TEXT)
RETURNS void AS $$
BEGIN
  PERFORM pgmq._create_queue(queue_name, false);
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.create_unlogged(queue_name TEXT)
RETURNS void AS $$
BEGIN
  PERFORM pgmq._create_queue(queue_name, true);
END;
$$ LANGUAGE plpgsql;

-- Same signature as PGMQ; partitioned queues need pg_partman, which this layer does not drive.
CREATE OR REPLACE FUNCTION pgmq.create_partitioned(
  queue_name TEXT,
  partition_interval TEXT DEFAULT '10000',
  retention_interval TEXT DEFAULT '100000'
)
RETURNS void AS $$
BEGIN
  RAISE EXCEPTION USING
    MESSAGE = format(
      'cannot create partitioned queue "%s": the PGMQ compatibility layer does not support '
      'partitioned queues; use pgmq.create',
      queue_name
    );
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.create(queue_name TEXT)
RETURNS void AS $$
BEGIN
  PERFORM pgmq.create_non_partitioned(queue_name);
END;
$$ LANGUAGE plpgsql;

-- Drops the queue and archive tables and the pgmq.meta row. Like PGMQ 1.5.2, returns false (with a
-- notice) when the queue does not exist.
CREATE OR REPLACE FUNCTION pgmq.drop_queue(queue_name TEXT)
RETURNS BOOLEAN AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  atable TEXT := pgmq.format_table_name(queue_name, 'a');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('pgmq.queue_' || qtable));

  IF to_regclass(format('pgmq.%I', qtable)) IS NULL THEN
    RAISE NOTICE 'pgmq queue `%` does not exist', queue_name;
    RETURN false;
  END IF;

  EXECUTE format('DROP TABLE IF EXISTS pgmq.%I', qtable);
  EXECUTE format('DROP TABLE IF EXISTS pgmq.%I', atable);
  EXECUTE 'DELETE FROM pgmq.meta WHERE queue_name = $1' USING queue_name;
  RETURN true;
END;
$$ LANGUAGE plpgsql;

-- Deprecated in PGMQ 1.5; kept for signature parity.
CREATE OR REPLACE FUNCTION pgmq.drop_queue(queue_name TEXT, partitioned BOOLEAN)
RETURNS BOOLEAN AS $$
BEGIN
  RAISE WARNING 'drop_queue(queue_name, partitioned) is deprecated and will be removed in PGMQ '
    'v2.0. Use drop_queue(queue_name) instead.';
  RETURN pgmq.drop_queue(queue_name);
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Sending
------------------------------------------------------------

-- The one real implementation; every other send overload resolves to it. `delay` is the
-- timestamp at which the message becomes visible.
CREATE OR REPLACE FUNCTION pgmq.send(
  queue_name TEXT,
  msg JSONB,
  headers JSONB,
  delay TIMESTAMP WITH TIME ZONE
) RETURNS SETOF BIGINT AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
  RETURN QUERY EXECUTE format(
    'INSERT INTO pgmq.%I (vt, message, headers) VALUES ($1, $2, $3) RETURNING msg_id',
    qtable
  ) USING delay, msg, headers;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB)
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send(queue_name, msg, NULL::jsonb, clock_timestamp());
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, headers JSONB)
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send(queue_name, msg, headers, clock_timestamp());
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, delay INTEGER)
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send(
    queue_name, msg, NULL::jsonb, clock_timestamp() + make_interval(secs => delay)
  );
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, delay TIMESTAMP WITH TIME ZONE)
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send(queue_name, msg, NULL::jsonb, delay);
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send(queue_name TEXT, msg JSONB, headers JSONB, delay INTEGER)
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send(
    queue_name, msg, headers, clock_timestamp() + make_interval(secs => delay)
  );
$$ LANGUAGE sql;

-- The one real batch implementation. Messages and headers are paired by position (a shorter
-- array is padded with NULLs, as PGMQ does); ids are assigned, and returned, in array order.
CREATE OR REPLACE FUNCTION pgmq.send_batch(
  queue_name TEXT,
  msgs JSONB[],
  headers JSONB[],
  delay TIMESTAMP WITH TIME ZONE
) RETURNS SETOF BIGINT AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
  RETURN QUERY EXECUTE format(
    $QUERY$
    INSERT INTO pgmq.%I (vt, message, headers)
    SELECT $1, t.message, t.headers
    FROM unnest($2, coalesce($3, ARRAY[]::jsonb[])) WITH ORDINALITY AS t(message, headers, ord)
    ORDER BY t.ord
    RETURNING msg_id
    $QUERY$,
    qtable
  ) USING delay, msgs, headers;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[])
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send_batch(queue_name, msgs, NULL::jsonb[], clock_timestamp());
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[], headers JSONB[])
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send_batch(queue_name, msgs, headers, clock_timestamp());
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(queue_name TEXT, msgs JSONB[], delay INTEGER)
RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send_batch(
    queue_name, msgs, NULL::jsonb[], clock_timestamp() + make_interval(secs => delay)
  );
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(
  queue_name TEXT,
  msgs JSONB[],
  delay TIMESTAMP WITH TIME ZONE
) RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send_batch(queue_name, msgs, NULL::jsonb[], delay);
$$ LANGUAGE sql;

CREATE OR REPLACE FUNCTION pgmq.send_batch(
  queue_name TEXT,
  msgs JSONB[],
  headers JSONB[],
  delay INTEGER
) RETURNS SETOF BIGINT AS $$
  SELECT * FROM pgmq.send_batch(
    queue_name, msgs, headers, clock_timestamp() + make_interval(secs => delay)
  );
$$ LANGUAGE sql;

------------------------------------------------------------
-- Reading
------------------------------------------------------------

-- Claims up to `qty` visible messages, lowest msg_id first, hiding each for `vt` seconds and
-- counting the read. SKIP LOCKED lets concurrent readers pass over rows another reader is
-- claiming, so no message is handed to two readers. A non-empty `conditional` only matches
-- messages whose body contains it (jsonb @>).
CREATE OR REPLACE FUNCTION pgmq.read(
  queue_name TEXT,
  vt INTEGER,
  qty INTEGER,
  conditional JSONB DEFAULT '{}'
)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
  RETURN QUERY EXECUTE format(
    $QUERY$
    WITH cte AS (
      SELECT msg_id
      FROM pgmq.%1$I
      WHERE vt <= clock_timestamp()
        AND ($3 IS NULL OR $3 = '{}'::jsonb OR message @> $3)
      ORDER BY msg_id ASC
      LIMIT $1
      FOR UPDATE SKIP LOCKED
    ),
    claimed AS (
      UPDATE pgmq.%1$I m
      SET vt = clock_timestamp() + $2,
          read_ct = m.read_ct + 1
      FROM cte
      WHERE m.msg_id = cte.msg_id
      RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message, m.headers
    )
    SELECT msg_id, read_ct, enqueued_at, vt, message, headers
    FROM claimed
    ORDER BY msg_id ASC
    $QUERY$,
    qtable
  ) USING qty, make_interval(secs => vt), conditional;
END;
$$ LANGUAGE plpgsql;

-- Repeats pgmq.read every `poll_interval_ms` until it returns messages or `max_poll_seconds`
-- have passed. As in PGMQ, the deadline is checked before each attempt, and each attempt sees
-- messages committed since the previous one.
CREATE OR REPLACE FUNCTION pgmq.read_with_poll(
  queue_name TEXT,
  vt INTEGER,
  qty INTEGER,
  max_poll_seconds INTEGER DEFAULT 5,
  poll_interval_ms INTEGER DEFAULT 100,
  conditional JSONB DEFAULT '{}'
)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
  stop_at TIMESTAMP WITH TIME ZONE := clock_timestamp() + make_interval(secs => max_poll_seconds);
BEGIN
  LOOP
    IF clock_timestamp() >= stop_at THEN
      RETURN;
    END IF;

    RETURN QUERY SELECT * FROM pgmq.read(queue_name, vt, qty, conditional);
    IF FOUND THEN
      RETURN;
    END IF;

    PERFORM pg_sleep(poll_interval_ms::numeric / 1000);
  END LOOP;
END;
$$ LANGUAGE plpgsql;

-- Reads and deletes the first visible message in one step.
CREATE OR REPLACE FUNCTION pgmq.pop(queue_name TEXT)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
  RETURN QUERY EXECUTE format(
    $QUERY$
    WITH cte AS (
      SELECT msg_id
      FROM pgmq.%1$I
      WHERE vt <= clock_timestamp()
      ORDER BY msg_id ASC
      LIMIT 1
      FOR UPDATE SKIP LOCKED
    )
    DELETE FROM pgmq.%1$I m
    USING cte
    WHERE m.msg_id = cte.msg_id
    RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message, m.headers
    $QUERY$,
    qtable
  );
END;
$$ LANGUAGE plpgsql;

-- Sets a message's visibility to now + `vt` seconds and returns it. read_ct is left alone.
CREATE OR REPLACE FUNCTION pgmq.set_vt(queue_name TEXT, msg_id BIGINT, vt INTEGER)
RETURNS SETOF pgmq.message_record AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
  RETURN QUERY EXECUTE format(
    $QUERY$
    UPDATE pgmq.%I
    SET vt = clock_timestamp() + $1
    WHERE msg_id = $2
    RETURNING msg_id, read_ct, enqueued_at, vt, message, headers
    $QUERY$,
    qtable
  ) USING make_interval(secs => vt), msg_id;
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Archiving and deleting
------------------------------------------------------------

-- Moves one message from q_<queue> to a_<queue>; false when no such message is in the queue.
CREATE OR REPLACE FUNCTION pgmq.archive(queue_name TEXT, msg_id BIGINT)
RETURNS BOOLEAN AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  atable TEXT := pgmq.format_table_name(queue_name, 'a');
  archived_id BIGINT;
BEGIN
  EXECUTE format(
    $QUERY$
    WITH archived AS (
      DELETE FROM pgmq.%I
      WHERE msg_id = $1
      RETURNING msg_id, vt, read_ct, enqueued_at, message, headers
    )
    INSERT INTO pgmq.%I (msg_id, vt, read_ct, enqueued_at, message, headers)
    SELECT msg_id, vt, read_ct, enqueued_at, message, headers
    FROM archived
    RETURNING msg_id
    $QUERY$,
    qtable,
    atable
  ) USING msg_id INTO archived_id;
  RETURN archived_id IS NOT NULL;
END;
$$ LANGUAGE plpgsql;

-- Moves the given messages to a_<queue>; returns the ids that were in the queue.
CREATE OR REPLACE FUNCTION pgmq.archive(queue_name TEXT, msg_ids BIGINT[])
RETURNS SETOF BIGINT AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  atable TEXT := pgmq.format_table_name(queue_name, 'a');
BEGIN
  RETURN QUERY EXECUTE format(
    $QUERY$
    WITH archived AS (
      DELETE FROM pgmq.%I
      WHERE msg_id = ANY($1)
      RETURNING msg_id, vt, read_ct, enqueued_at, message, headers
    )
    INSERT INTO pgmq.%I (msg_id, vt, read_ct, enqueued_at, message, headers)
    SELECT msg_id, vt, read_ct, enqueued_at, message, headers
    FROM archived
    ORDER BY msg_id
    RETURNING msg_id
    $QUERY$,
    qtable,
    atable
  ) USING msg_ids;
END;
$$ LANGUAGE plpgsql;

-- Deletes one message permanently; false when no such message is in the queue.
CREATE OR REPLACE FUNCTION pgmq.delete(queue_name TEXT, msg_id BIGINT)
RETURNS BOOLEAN AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  deleted_id BIGINT;
BEGIN
  EXECUTE format('DELETE FROM pgmq.%I WHERE msg_id = $1 RETURNING msg_id', qtable)
  USING msg_id INTO deleted_id;
  RETURN deleted_id IS NOT NULL;
END;
$$ LANGUAGE plpgsql;

-- Deletes the given messages permanently; returns the ids that were in the queue.
CREATE OR REPLACE FUNCTION pgmq.delete(queue_name TEXT, msg_ids BIGINT[])
RETURNS SETOF BIGINT AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
BEGIN
  RETURN QUERY EXECUTE format(
    $QUERY$
    WITH deleted AS (
      DELETE FROM pgmq.%I
      WHERE msg_id = ANY($1)
      RETURNING msg_id
    )
    SELECT msg_id FROM deleted ORDER BY msg_id
    $QUERY$,
    qtable
  ) USING msg_ids;
END;
$$ LANGUAGE plpgsql;

-- Deletes every message in the queue (the archive is kept); returns how many were deleted.
CREATE OR REPLACE FUNCTION pgmq.purge_queue(queue_name TEXT)
RETURNS BIGINT AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  deleted_count BIGINT;
BEGIN
  EXECUTE format('DELETE FROM pgmq.%I', qtable);
  GET DIAGNOSTICS deleted_count = ROW_COUNT;
  RETURN deleted_count;
END;
$$ LANGUAGE plpgsql;

------------------------------------------------------------
-- Observing queues
------------------------------------------------------------

-- queue_length counts messages in the queue, queue_visible_length those readable now;
-- total_messages counts every message ever sent (the msg_id sequence), whatever became of it.
CREATE OR REPLACE FUNCTION pgmq.metrics(queue_name TEXT)
RETURNS pgmq.metrics_result AS $$
DECLARE
  qtable TEXT := pgmq.format_table_name(queue_name, 'q');
  msg_id_seq TEXT := pg_get_serial_sequence(format('pgmq.%I', qtable), 'msg_id');
  result_row pgmq.metrics_result;
BEGIN
  EXECUTE format(
    $QUERY$
    WITH q_summary AS (
      SELECT
        count(*) AS queue_length,
        count(*) FILTER (WHERE vt <= now()) AS queue_visible_length,
        EXTRACT(epoch FROM (now() - max(enqueued_at)))::int AS newest_msg_age_sec,
        EXTRACT(epoch FROM (now() - min(enqueued_at)))::int AS oldest_msg_age_sec,
        now() AS scrape_time
      FROM pgmq.%I
    ),
    all_metrics AS (
      SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS total_messages
      FROM %s
    )
    SELECT
      $1,
      q_summary.queue_length,
      q_summary.newest_msg_age_sec,
      q_summary.oldest_msg_age_sec,
      all_metrics.total_messages,
      q_summary.scrape_time,
      q_summary.queue_visible_length
    FROM q_summary, all_metrics
    $QUERY$,
    qtable,
    msg_id_seq::regclass
  ) INTO result_row USING queue_name;
  RETURN result_row;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.metrics_all()
RETURNS SETOF pgmq.metrics_result AS $$
DECLARE
  queue RECORD;
BEGIN
  FOR queue IN SELECT m.queue_name FROM pgmq.meta m ORDER BY m.queue_name LOOP
    RETURN NEXT pgmq.metrics(queue.queue_name);
  END LOOP;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION pgmq.list_queues()
RETURNS SETOF pgmq.queue_record AS $$
BEGIN
  RETURN QUERY SELECT m.queue_name, m.is_partitioned, m.is_unlogged, m.created_at FROM pgmq.meta m;
END;
$$ LANGUAGE plpgsql;
