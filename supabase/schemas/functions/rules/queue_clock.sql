-- PGMQ's clock as it runs (docs/design/clock.md): clock_timestamp(), the time PGMQ's send,
-- read and set_vt compare a message's visibility (`vt`) with. The core's own reads and writes of
-- `vt` (the ordered read, hiding claimed messages, prune, the dashboard's queue counts) use it, so
-- they agree with PGMQ's. A test engine never replaces it: advancing a test clock moves the `vt`
-- of the kit's queues back instead. Inlined like clock_now (plain SQL, no SET); volatile, as
-- clock_timestamp() is.
create or replace function switchyard.queue_clock()
returns timestamptz
language sql
volatile
parallel safe
as $$ select pg_catalog.clock_timestamp() $$;
