-- The SQL core's clock (docs/design/clock.md): the time every time rule reads — wait
-- timeouts, sleeps and `until`, delayed starts, run deadlines, retry and stall recovery, the
-- lost-message grace, schedules, start keys' TTLs and delays, rate-limit refills, heartbeats, and
-- every recorded time (column defaults included). It is now(), this transaction's start, and
-- nothing else: a plain SQL expression, stable, neither STRICT nor security definer and without
-- SET options, so PostgreSQL inlines it into the calling statement and it costs what now() costs.
-- A test engine (switchyard/testing) replaces this body, in its own test database only, with a
-- set time that moves when the test advances it; PGMQ's clock (queue_now, queue_clock) is never
-- replaced: the engine moves the queue tables' times instead.
create or replace function switchyard.clock_now()
returns timestamptz
language sql
stable
parallel safe
as $$ select pg_catalog.now() $$;
