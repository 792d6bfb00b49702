-- PGMQ's clock at this transaction's start (docs/design/clock.md): what the core reads when it
-- compares with or writes a time of PGMQ's frame, where PGMQ itself reads the real clock: a queue
-- message's `enqueued_at`, its `vt` in the metrics, and the `ranked_at` of a message body
-- (docs/design/flow-control.md#priority-and-keys-in-turn),
-- which the ordered read ranks against `enqueued_at`. It is now(), and unlike clock_now a test
-- engine never replaces it: advancing a test clock moves these times back instead. Inlined like
-- clock_now (plain SQL, stable, no SET).
create or replace function switchyard.queue_now()
returns timestamptz
language sql
stable
parallel safe
as $$ select pg_catalog.now() $$;
