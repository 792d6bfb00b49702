-- The SQL core, unreleased: assembled by `deno task sql:assemble` from
-- supabase/upgrades/unreleased/ and the files of supabase/schemas/ whose definitions differ from what the
-- released migrations leave (docs/design/code-layout.md#the-sql-source-and-its-migrations).
-- Do not edit: edit the source and assemble again. Released migrations are never edited.

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/010_run_controls.sql

-- Rerun, fork, move and pause (issue 41, docs/design/rerun.md), as
-- supabase/schemas/tables/040_runs.sql, 020_flows.sql and 046_run_events.sql have them: the runs'
-- lineage, pause and attempt floor, the events naming those actions, and whenExhausted 'pause'.
-- Nullable columns and a constant default rewrite nothing; the widened checks are added NOT VALID
-- and validated afterwards, so each table is scanned under a lock that lets readers and writers
-- go on.
alter table switchyard.runs add column forked_from uuid;

alter table switchyard.runs add column from_step text;

alter table switchyard.runs add column paused_at timestamptz;

alter table switchyard.runs add column pause_reason text;

alter table switchyard.runs add column attempt_floor int not null default 0;

create index runs_paused on switchyard.runs (paused_at) where paused_at is not null;

create index runs_forked_from on switchyard.runs (forked_from) where forked_from is not null;

alter table switchyard.run_events drop constraint run_events_event_check;

alter table switchyard.run_events add constraint run_events_event_check
  check (event in ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried',
                   'waiting', 'signalled', 'timed out', 'progress', 'rerun', 'forked', 'moved',
                   'paused', 'resumed')) not valid;

alter table switchyard.run_events validate constraint run_events_event_check;

alter table switchyard.steps drop constraint steps_when_exhausted_check;

alter table switchyard.steps add constraint steps_when_exhausted_check
  check (when_exhausted in ('fail', 'skip', 'skip-cascade', 'pause')) not valid;

alter table switchyard.steps validate constraint steps_when_exhausted_check;

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/011_user_rerun_aliases.sql

-- The opt-in of signed-in users' reruns (issue 41, docs/design/rerun.md), as
-- supabase/schemas/tables/052_user_rerun_aliases.sql has it: empty, so nobody may until an
-- operator inserts an alias. A new table: nothing is rewritten. Its default is now() here (the
-- clock does not exist yet before the functions); after/011_user_rerun_aliases_clock.sql sets
-- switchyard.clock_now(), as the table declares it.
create table switchyard.user_rerun_aliases (
  alias text primary key,
  added_at timestamptz not null default now()
);

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/042_metric_counters.sql

-- Counters and histograms (issue 42), as supabase/schemas/tables/120_metric_counters.sql creates them.
-- The monotonic counters and histograms of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels): what
-- Prometheus' rate(), increase() and histogram_quantile() read. One row per figure, label set,
-- histogram bucket and shard; a figure is the sum of its rows. The shard is the backend process
-- id of the session that counted: a backend runs one transaction at a time, so two transactions
-- never write the same row (no lock to queue on, no deadlock) and the hot path adds one upsert
-- per statement, grouped by label set, never one per task on a shared row. switchyard.prune folds
-- the rows of other backends into shard 0 (switchyard.fold_metric_counters), so the table
-- follows the connections in use, never the work done. Nothing else deletes a row and no counter
-- is read from the history, so pruning runs or tasks never makes a counter go down.
--
--   metric   'claims', 'retries', 'failed_attempts', 'throttled', 'task_duration',
--            'queue_wait', 'runs_retried', 'run_duration', 'signals' (runs started are derived
--            from these and the started runs: the view metrics_counters)
--   bucket   a histogram's bucket (switchyard.metric_bucket: 1 to 16 by the bounds of
--            switchyard.metric_bucket_bounds(), 17 past the last), 0 for a plain counter
--   n        how many were counted; total the sum of the observations (seconds)
create table switchyard.metric_counters (
  metric text not null,
  queue_name text not null default '',
  flow_slug text not null default '',     -- the concrete flow (the version)
  step_slug text not null default '',
  outcome text not null default '',       -- a run's end, a signal's ('delivered', 'kept')
  bucket smallint not null default 0,
  shard int not null,
  n bigint not null default 0,
  total double precision not null default 0,
  primary key (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard)
) with (fillfactor = 50);

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/043_run_spans.sql

-- Run spans (issue 42, docs/design/observability.md#metrics-traces-and-charts), as
-- supabase/schemas/tables/040_runs.sql
-- declares them. Runs that ended before this step get no span: they are marked taken.
alter table switchyard.runs add column run_span_taken boolean not null default false;
update switchyard.runs set run_span_taken = true
 where trace_context is not null and status <> 'started';
create index runs_span_pending on switchyard.runs (run_id)
  where trace_context is not null and not run_span_taken;

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/044_metric_samples.sql

-- Per-minute samples of the counters (issue 42), as supabase/schemas/tables/121_metric_samples.sql
-- creates them. The charts start from the first sample: the minutes before it show nothing.
-- The per-minute samples of the counters
-- (docs/design/observability.md#counters-histograms-and-levels), what the dashboard's
-- charts and the view metrics_minutes are differences of: one row per queue and minute, the
-- queue's counters of switchyard.metric_counters (summed over flows, steps and shards) and its
-- lag as they were when switchyard.sample_metrics took it, the first time in that minute (a
-- worker's heartbeat or the keep-alive tick). A chart's minute is the difference of the
-- sample ending it and the one before it, its p95 the quantile of the bucket differences, as
-- Prometheus' increase() and histogram_quantile() read the same counters. sample_metrics
-- deletes the samples older than the charts' longest span (1440 minutes) but each queue's newest
-- of them (the base of the first difference), so the table holds at most 1442 rows per queue,
-- whatever the work and whether prune runs or not.
--
--   task_duration, queue_wait   a histogram's count per bucket (1 to 17, not cumulative: the
--                               buckets of switchyard.metric_bucket)
--   lag_seconds                 how long the oldest visible message had been visible
--                               (the gauge switchyard_queue_lag_seconds; 0: none)
create table switchyard.metric_samples (
  queue_name text not null,
  minute timestamptz not null,
  taken_at timestamptz not null,
  claims bigint not null,
  retries bigint not null,
  failed_attempts bigint not null,
  throttled bigint not null,
  completions bigint not null,
  task_duration bigint[] not null,
  task_duration_seconds double precision not null,
  queue_wait bigint[] not null,
  lag_seconds double precision not null,
  depth bigint not null,
  primary key (queue_name, minute)
);
create index metric_samples_minute on switchyard.metric_samples (minute);

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/045_run_span_restart.sql

-- A span for a retried run's new end (issue 42,
-- docs/design/observability.md#metrics-traces-and-charts), as
-- supabase/schemas/tables/040_runs.sql declares it: when the span of a run retried or rerun after
-- its first span was recorded starts. Null for every run so far.
alter table switchyard.runs add column span_started_at timestamptz;

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/046_row_triggers.sql

-- Row triggers (issue 43, docs/design/ingestion.md), as
-- supabase/schemas/tables/130_row_triggers.sql
-- creates them: the declarations and their backfills.
create table switchyard.row_triggers (
  name text primary key check (name ~ '^[a-z][a-z0-9_]{0,46}$'),
  table_schema text not null,
  table_name text not null,
  alias text not null,                     -- what a write starts: an alias (or a flow slug)
  events text[] not null,                  -- of 'insert', 'update', 'delete'
  input_columns text[],                    -- the input: these columns as an object, or
  input_expression text,                   -- this expression over the row's columns, or the row
  condition text,                          -- a boolean expression: only rows where it is true
  key_by text,                             -- the start key: 'row' (the primary key) or a column
  mode text check (mode in ('singleton', 'dedupe', 'debounce')),
  ttl int,
  delay int,
  max_delay int,
  backfill_state text check (backfill_state in ('pending', 'done')), -- null: none declared
  backfill_after text[],                   -- the primary key of the last row the backfill passed
  backfill_rows bigint not null default 0, -- rows the backfill passed
  backfill_started bigint not null default 0, -- runs its starts returned (new or keyed)
  backfill_batches int not null default 0,
  backfill_updated_at timestamptz,
  declared_at timestamptz not null default now(), -- clock_now(): after/020_row_triggers_clock.sql
  check (input_columns is null or input_expression is null),
  check (events <@ array['insert', 'update', 'delete'] and cardinality(events) between 1 and 3)
);

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/047_batches.sql

-- Batching (issue 43, docs/design/batching.md), as supabase/schemas/tables/135_batches.sql and
-- 130_row_triggers.sql declare them: the open batches and their events, and a row trigger's
-- batch_by. start_flow gains batch_key: the previous signature goes first (with both, every
-- call that leaves batch_key out would be ambiguous); the new definition follows in this
-- migration, in the same transaction, so no caller sees start_flow missing.
create table switchyard.batches (
  batch_id bigint generated always as identity primary key,
  started_as text not null,
  batch_key text not null check (length(batch_key) between 1 and 200),
  run_id uuid not null unique,
  max_size int not null check (max_size between 1 and 10000),
  timeout int not null check (timeout between 1 and 86400),
  size int not null default 0,
  bytes bigint not null default 2,
  opened_at timestamptz not null default now(), -- clock_now(): after/021_batches_clock.sql
  close_at timestamptz not null,
  last_error text,
  constraint batches_open_key unique (started_as, batch_key)
);

create index batches_close_at on switchyard.batches (close_at);

create table switchyard.batch_events (
  batch_id bigint not null references switchyard.batches on delete cascade,
  seq int not null,
  input jsonb not null,
  added_at timestamptz not null default now(), -- clock_now(): after/021_batches_clock.sql
  primary key (batch_id, seq)
);

alter table switchyard.row_triggers add column batch_by text;

drop function switchyard.start_flow(text, jsonb, uuid, uuid, timestamptz, timestamptz, text,
  text, int, int, int, text, int);

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/048_run_origin.sql

-- Where a run came from (issue 43, docs/design/origins.md), as supabase/schemas/tables/040_runs.sql
-- declares it: the run's origin and the index of the runs that have one. start_flow takes the
-- origin as a new last argument; its released signature is already dropped by 047_batches, so
-- the redefinition leaves no second overload.
alter table switchyard.runs add column origin jsonb;

create index runs_origin_started on switchyard.runs (started_at) where origin is not null;

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/before/049_history_hot.sql

-- Step states updated in place (issue 45), as supabase/schemas/tables/041_step_states.sql declares
-- them: the open waits' deadline in a column of its own (wait_due, cleared when the step ends)
-- and the index of the open waits on it, with a predicate that names no status, so that no
-- update of a step's status changes an indexed column; and room on each page for the rows' next
-- versions (fillfactor 80; pages written before keep theirs until rewritten).
alter table switchyard.step_states add column wait_due timestamptz;

-- The waits in progress now (found through the old index of started waits).
update switchyard.step_states set wait_due = wait_deadline
 where status = 'started' and wait_deadline is not null;

alter table switchyard.step_states
  add constraint step_states_wait_due_started check (wait_due is null or status = 'started');

drop index switchyard.step_states_wait_deadline;

create index step_states_wait_due on switchyard.step_states (wait_due) where wait_due is not null;

alter table switchyard.step_states set (fillfactor = 80);

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/_count_metrics.sql

-- Counts figures of the metrics (docs/design/observability.md#counters-histograms-and-levels) for a
-- statement's rows, given as
-- parallel arrays (one element per row; an array shorter than the rest, or null, is '' for a
-- label and no observation for `seconds`; `metric_names` of one element names every row's
-- figure): one upsert of switchyard.metric_counters per label
-- set (and bucket), in key order, into the rows of this backend's shard (its process id), which
-- no other transaction writes. With `seconds`, each row is an observation of a histogram: its
-- bucket (switchyard.metric_bucket) counts it and `total` adds it up. Called by the claim, the
-- completion, the failed-attempt and run-event triggers, and signal_run: one call per statement.
create or replace function switchyard._count_metrics(
  metric_names text[], queue_names text[], flow_slugs text[], step_slugs text[],
  outcomes text[] default null, seconds double precision[] default null
)
returns void
language plpgsql
set search_path = ''
as $$
begin
  insert into switchyard.metric_counters as c
         (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
  select coalesce(x.m, metric_names[1]), coalesce(x.q, ''), coalesce(x.f, ''), coalesce(x.s, ''),
         coalesce(x.o, ''),
         case when x.secs is null then 0 else switchyard.metric_bucket(x.secs) end,
         pg_catalog.pg_backend_pid(),
         count(*), coalesce(sum(greatest(x.secs, 0)), 0)
    from unnest(metric_names, queue_names, flow_slugs, step_slugs, outcomes, seconds)
           as x(m, q, f, s, o, secs)
   group by 1, 2, 3, 4, 5, 6
   order by 1, 2, 3, 4, 5, 6
  on conflict (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard) do update
     set n = c.n + excluded.n, total = c.total + excluded.total;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/_refuse.sql

-- Raises a refusal of the SQL core (docs/design/errors.md, the SQL error contract): SQLSTATE
-- `code` (22023, 23505, 42501, 55000 or PT429), `message` for people (it names the value and the
-- rule), and the DETAIL callers map by: a JSON object with `rule`, `argument` and `value` (cut to
-- 200 characters, or null) and `context`'s fields besides; `hint` when given. The one place that
-- builds a refusal's detail, so every refusal carries the same fields. Never returns. Volatile, so
-- a call with constant arguments is never evaluated while a statement is planned.
create or replace function switchyard._refuse(
  code text, rule text, argument text, value text, message text,
  context jsonb default '{}', hint text default null
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  detail text := (jsonb_build_object('rule', _refuse.rule, 'argument', _refuse.argument,
                                     'value', left(_refuse.value, 200))
                  || coalesce(_refuse.context, '{}'))::text;
begin
  if _refuse.hint is null then
    raise exception using errcode = _refuse.code, message = _refuse.message, detail = detail;
  end if;
  raise exception using errcode = _refuse.code, message = _refuse.message, detail = detail,
    hint = _refuse.hint;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/assert_queue_name.sql

-- Refuses a queue name that breaks the naming rule (docs/design/overview.md#identity-rules): the
-- third place
-- the rule is checked, after the literal types and the runtime check. Returns the name.
-- queue_name_problem words the rule; the detail names it (queue_name_missing, _format,
-- _reserved_separator).
create or replace function switchyard.assert_queue_name(name text, explicit boolean)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  problem text := switchyard.queue_name_problem(name, explicit);
begin
  if problem is not null then
    perform switchyard._refuse('22023',
      case when name is null then 'queue_name_missing'
           when name !~ '^[a-z][a-z0-9_]*$' or length(name) > 47 then 'queue_name_format'
           else 'queue_name_reserved_separator' end,
      'queue_name', name, problem,
      context => jsonb_build_object('explicit', explicit));
  end if;
  return name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/assert_slug.sql

-- Refuses a flow, step or alias slug that breaks the slug rule
-- (docs/design/overview.md#identity-rules):
-- letters, digits and single underscores, starting with a letter; `run` is reserved for steps.
-- The value it echoes is clipped.
create or replace function switchyard.assert_slug(kind text, slug text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  if slug is null or slug !~ '^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]+)*$' or length(slug) > 47 then
    perform switchyard._refuse('22023', 'slug_format',
      case kind when 'alias' then 'alias_name' else kind || '_slug' end, slug, format(
      '%s slug %s is invalid: start with a letter, then letters, digits and single underscores '
      '(at most 47 characters)', kind, switchyard._clip(slug)),
      context => jsonb_build_object('kind', kind));
  end if;
  if kind = 'step' and lower(slug) = 'run' then
    perform switchyard._refuse('22023', 'step_slug_reserved', 'step_slug', slug, format(
      'step slug %s is invalid: "run" is reserved', switchyard._clip(slug)));
  end if;
  return slug;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/clock_now.sql

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

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/limit_value.sql

-- One limit of switchyard.limits() by name: what every check of a limit reads, so an operator's
-- setting (set_setting) changes it everywhere at once. Refuses an unknown name.
create or replace function switchyard.limit_value(name text)
returns int
language plpgsql
stable
set search_path = ''
as $$
declare
  setting text;
begin
  case name
    when 'max_function_name_chars' then
      return 63;      -- a DNS label; the longest generated name (47 + '-worker') is 54
    when 'max_reason_chars' then
      return 1000;
    when 'max_input_bytes', 'max_output_bytes' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 1048576);
    -- A map step's outputs together (its aggregate, what its dependents get), 16 MiB.
    when 'max_map_output_bytes' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 16777216);
    -- New runs per signed-in user per minute (start_user_run).
    when 'user_runs_per_minute' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 60);
    -- What one level of run priority is worth in waiting time, in seconds
    -- (docs/design/flow-control.md#priority-and-keys-in-turn).
    when 'priority_ageing_seconds' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 60);
    -- A progress event's JSON text (ctx.progress, report_progress), 8 KiB.
    when 'max_progress_bytes' then
      return 8192;
    -- Progress events per task in any window of one second from its first (report_progress).
    when 'progress_per_second' then
      return 20;
    else
      perform switchyard._refuse('22023', 'limit_unknown', 'name', name, format(
        'limit %s is unknown: use max_input_bytes, max_output_bytes, max_map_output_bytes, '
        'user_runs_per_minute, priority_ageing_seconds, max_function_name_chars, max_reason_chars, '
        'max_progress_bytes or progress_per_second', switchyard._clip(name)));
  end case;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/metric_bucket.sql

-- The histogram bucket of an observation of `seconds`
-- (docs/design/observability.md#counters-histograms-and-levels): 1 for the
-- first bound of switchyard.metric_bucket_bounds() at or above it (Prometheus' le is
-- inclusive), 17 past the last. width_bucket counts the bounds at or below its operand, so it
-- counts the negated bounds, reversed, at or below the negated observation: the bounds at or
-- above it. A negative duration (clocks of different machines) is the first bucket.
create or replace function switchyard.metric_bucket(seconds double precision)
returns smallint
language sql
immutable
parallel safe
as $$
  select (17 - width_bucket(-greatest(seconds, 0),
    '{-3600,-900,-300,-60,-30,-10,-5,-2.5,-1,-0.5,-0.25,-0.1,-0.05,-0.025,-0.01,-0.005}'::double precision[]))::smallint
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/metric_bucket_bounds.sql

-- The upper bounds, in seconds, of every histogram bucket of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels): Prometheus' default buckets (5 ms
-- to 10 s) and five more for long tasks, waits and
-- runs (30 s to 1 h). A bucket past the last one counts the rest (le="+Inf").
create or replace function switchyard.metric_bucket_bounds()
returns double precision[]
language sql
immutable
parallel safe
as $$
  select '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30,60,300,900,3600}'::double precision[]
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/metric_quantile.sql

-- The `q` quantile, in seconds, of a histogram given as its count per bucket (`counts`, 17
-- elements in the order of switchyard.metric_bucket, not cumulative: a difference of two
-- samples, say), interpolated as Prometheus' histogram_quantile() does
-- (docs/design/observability.md#counters-histograms-and-levels): the first bucket whose cumulative
-- count reaches q times the total, linearly between
-- its bounds (0 below the first); the last finite bound (3600) when that is the +Inf bucket;
-- null when the histogram counted nothing. So the dashboard's p95 of a minute equals
-- histogram_quantile(0.95, ...) over the same bucket differences.
create or replace function switchyard.metric_quantile(q double precision, counts bigint[])
returns double precision
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
declare
  bounds double precision[] := switchyard.metric_bucket_bounds();
  total double precision;
  rank double precision;
  below double precision := 0;
  c double precision;
  lower_bound double precision;
begin
  if q is null or q < 0 or q > 1 or q = 'NaN'::double precision then
    perform switchyard._refuse('22023', 'quantile_range', 'q', q::text, format(
      'metric_quantile: q %s is invalid: use a number from 0 to 1', coalesce(q::text, 'null')),
      context => jsonb_build_object('min', 0, 'max', 1));
  end if;
  if counts is null or cardinality(counts) <> cardinality(bounds) + 1
     or array_position(counts, null) is not null
     or exists (select 1 from unnest(counts) x where x < 0) then
    perform switchyard._refuse('22023', 'bucket_counts', 'counts', counts::text, format(
      'metric_quantile: counts %s is invalid: use %s counts of at least 0, one per bucket of '
      'metric_bucket_bounds() and one past the last', coalesce(counts::text, 'null'),
      cardinality(bounds) + 1),
      context => jsonb_build_object('length', cardinality(bounds) + 1));
  end if;
  select sum(x) into total from unnest(counts) x;
  if total = 0 then
    return null;
  end if;
  rank := q * total;
  for i in 1 .. cardinality(counts) loop
    c := counts[i];
    if below + c >= rank then
      if i > cardinality(bounds) then
        return bounds[cardinality(bounds)];
      end if;
      lower_bound := case when i = 1 then 0 else bounds[i - 1] end;
      if c = 0 then
        return lower_bound;
      end if;
      return lower_bound + (bounds[i] - lower_bound) * ((rank - below) / c);
    end if;
    below := below + c;
  end loop;
  return bounds[cardinality(bounds)];
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/queue_clock.sql

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

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/queue_now.sql

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

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/rules/set_setting.sql

-- Sets (or, with null, clears) an operator setting: a limit of switchyard.limits() (input and
-- output sizes, user runs per minute, priority ageing) or a keep-alive setting (base URL, bearer,
-- hosts), each value checked against its rule before it is stored.
create or replace function switchyard.set_setting(name text, value text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  problem text;
begin
  if name is null
     or name not in ('functions_base_url', 'functions_bearer', 'functions_hosts', 'max_input_bytes',
                     'max_output_bytes', 'max_map_output_bytes', 'user_runs_per_minute',
                     'priority_ageing_seconds') then
    perform switchyard._refuse('22023', 'setting_unknown', 'name', name, format(
      'setting %s is unknown: use functions_base_url, functions_bearer, functions_hosts, '
      'max_input_bytes, max_output_bytes, max_map_output_bytes, user_runs_per_minute or '
      'priority_ageing_seconds',
      switchyard._clip(name)));
  end if;
  if value is not null then
    if name = 'functions_base_url' then
      problem := switchyard.base_url_problem(value);
    elsif name = 'functions_bearer' and value ~ '[[:space:][:cntrl:]]' then
      problem := 'a bearer contains no whitespace or control characters';
    elsif name = 'functions_bearer' and char_length(value) > 8192 then
      problem := format('it is %s characters long; the limit is 8192', char_length(value));
    elsif name in ('max_input_bytes', 'max_output_bytes')
          and (case when value ~ '^[0-9]{1,9}$' then value::int not between 65536 and 104857600
                    else true end) then
      problem := 'use a number of bytes from 65536 (64 KiB) to 104857600 (100 MiB)';
    elsif name = 'max_map_output_bytes'
          and (case when value ~ '^[0-9]{1,9}$' then value::int not between 65536 and 209715200
                    else true end) then
      -- jsonb holds at most 255 MB; an aggregate near that fails in PostgreSQL itself.
      problem := 'use a number of bytes from 65536 (64 KiB) to 209715200 (200 MiB)';
    elsif name = 'user_runs_per_minute'
          and (case when value ~ '^[0-9]{1,7}$' then value::int not between 1 and 1000000
                    else true end) then
      problem := 'use a number of runs from 1 to 1000000 (revoke start_user_run to allow none)';
    elsif name = 'priority_ageing_seconds'
          and (case when value ~ '^[0-9]{1,6}$' then value::int not between 1 and 86400
                    else true end) then
      problem := 'use a number of seconds from 1 to 86400 (what one priority level is worth)';
    elsif name = 'functions_hosts' then
      problem := switchyard._hosts_problem(value);
    end if;
    if problem is not null then
      perform switchyard._refuse('22023',
        case when name = 'functions_base_url' then 'url_format' else 'setting_value' end, 'value',
        case when name = 'functions_bearer' then null else value end, format(
        'setting %s %s is invalid: %s', name,
        case when name = 'functions_bearer' then '(value not shown)' else switchyard._clip(value) end,
        problem),
        context => jsonb_build_object('setting', name, 'problem', problem));
    end if;
  end if;
  if value is null then
    delete from switchyard.settings s where s.name = set_setting.name;
  else
    insert into switchyard.settings as s (name, value) values (set_setting.name, set_setting.value)
    on conflict on constraint settings_pkey do update set value = excluded.value, updated_at = switchyard.clock_now();
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/queues/_ensure_private_queue.sql

-- Creates or finds the private queue of a flow (docs/design/overview.md#queue-ownership): recorded
-- in the queue
-- catalog with its owner, created in PGMQ when absent, its queue table tuned for churn
-- (_tune_queue_table). Refuses a queue another flow owns or that is shared, and a name PGMQ
-- spells several ways. The values it echoes are clipped.
create or replace function switchyard._ensure_private_queue(queue text, owner text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  existing switchyard.queues;
begin
  perform switchyard.assert_queue_name(queue, false);
  perform switchyard._lock_queue_name(queue);
  select * into existing from switchyard.queues q where q.queue_name = queue;
  if found then
    if existing.ownership = 'shared' then
      perform switchyard._refuse('23505', 'queue_is_shared', 'queue_name', queue, format(
        'queue %s is shared; flow %s cannot use it as its private queue',
        switchyard._clip(queue), switchyard._clip(owner)),
        context => jsonb_build_object('flow_slug', left(owner, 200)));
    elsif existing.owner_flow <> owner then
      perform switchyard._refuse('23505', 'queue_owned_by_other_flow', 'queue_name', queue, format(
        'queue %s is the private queue of flow %s; flow %s cannot own it too',
        switchyard._clip(queue), switchyard._clip(existing.owner_flow), switchyard._clip(owner)),
        context => jsonb_build_object('flow_slug', left(owner, 200),
          'owner_flow', existing.owner_flow));
    end if;
    return;
  end if;
  if cardinality(switchyard._pgmq_spellings(queue)) > 0 then
    perform switchyard._refuse('23505', 'queue_not_in_catalog', 'queue_name', queue, format(
      'queue %s already exists in PGMQ (as %s) but is not in the switchyard registry; '
      'a private queue is never adopted: rename the flow or drop that queue',
      switchyard._clip(queue), array_to_string(switchyard._pgmq_spellings(queue), ', ')),
      context => jsonb_build_object('pgmq_spellings', to_jsonb(switchyard._pgmq_spellings(queue))));
  end if;
  perform pgmq.create(queue);
  perform switchyard._tune_queue_table(queue);
  insert into switchyard.queues (queue_name, pgmq_name, ownership, owner_flow)
  values (queue, queue, 'private', owner);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/queues/adopt_queue.sql

-- Administrative adoption of an existing PGMQ queue as a shared queue. Succeeds
-- only when the queue is empty or every message in it belongs to a tracked task. The adopted
-- queue's table is tuned for churn (_tune_queue_table).
create or replace function switchyard.adopt_queue(pgmq_queue_name text)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  canonical text := lower(pgmq_queue_name);
  spellings text[];
  existing switchyard.queues;
  foreign_ids bigint[];
  foreign_count bigint;
begin
  if pgmq_queue_name is null then
    perform switchyard._refuse('22023', 'argument_missing', 'pgmq_queue_name', null,
      'adopt_queue: queue name is missing');
  end if;
  perform switchyard.assert_queue_name(canonical, true);
  perform switchyard._lock_queue_name(canonical);
  spellings := switchyard._pgmq_spellings(canonical);
  if cardinality(spellings) = 0 then
    perform switchyard._refuse('22023', 'pgmq_queue_missing', 'pgmq_queue_name', pgmq_queue_name,
      format(
      'cannot adopt queue %s: PGMQ has no such queue', to_json(pgmq_queue_name)::text));
  elsif cardinality(spellings) > 1 then
    perform switchyard._refuse('22023', 'pgmq_queue_ambiguous', 'pgmq_queue_name', pgmq_queue_name,
      format(
      'cannot adopt queue %s: PGMQ lists it under several spellings (%s), which share one table',
      to_json(pgmq_queue_name)::text, array_to_string(spellings, ', ')),
      context => jsonb_build_object('pgmq_spellings', to_jsonb(spellings)));
  end if;
  select * into existing from switchyard.queues q where q.queue_name = canonical;
  if found then
    if existing.ownership = 'private' then
      perform switchyard._refuse('23505', 'queue_is_private', 'pgmq_queue_name', pgmq_queue_name,
        format(
        'cannot adopt queue %s: it is the private queue of flow %s',
        to_json(canonical)::text, to_json(existing.owner_flow)::text),
        context => jsonb_build_object('owner_flow', existing.owner_flow));
    end if;
    return 'already registered';
  end if;
  -- Hold off writers while the messages are checked. PGMQ names the queue's table
  -- (pgmq.format_table_name lower-cases the spelling).
  execute format('lock table pgmq.%I in exclusive mode', pgmq.format_table_name(spellings[1], 'q'));
  execute format(
    'select array_agg(m.msg_id order by m.msg_id), count(*) from pgmq.%I m
      where not exists (select 1 from switchyard.step_tasks t
                        where t.queue_name = $1 and t.message_id = m.msg_id)',
    pgmq.format_table_name(spellings[1], 'q')) into foreign_ids, foreign_count using canonical;
  if foreign_count > 0 then
    perform switchyard._refuse('55000', 'queue_has_untracked_messages', 'pgmq_queue_name',
      pgmq_queue_name, format(
      'cannot adopt queue %s: %s message(s) do not belong to any tracked task (message ids %s); '
      'adoption requires an empty queue or only tracked messages',
      to_json(spellings[1])::text, foreign_count, array_to_string(foreign_ids[1:20], ', ')),
      context => jsonb_build_object('untracked_count', foreign_count,
        'message_ids', to_jsonb(foreign_ids[1:20])));
  end if;
  perform switchyard._tune_queue_table(spellings[1]);
  insert into switchyard.queues (queue_name, pgmq_name, ownership, owner_flow, adopted_at)
  values (canonical, spellings[1], 'shared', null, switchyard.clock_now());
  return 'adopted';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/queues/ensure_shared_queue.sql

-- A shared (explicit, routed) queue: validated and provisioned when absent; never
-- adopted implicitly and never dropped with a flow. A queue it creates has its queue table
-- tuned for churn (_tune_queue_table).
create or replace function switchyard.ensure_shared_queue(queue text)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  existing switchyard.queues;
begin
  perform switchyard.assert_queue_name(queue, true);
  perform switchyard._lock_queue_name(queue);
  select * into existing from switchyard.queues q where q.queue_name = queue;
  if found then
    if existing.ownership = 'private' then
      perform switchyard._refuse('23505', 'queue_is_private', 'queue_name', queue, format(
        'queue %s is the private queue of flow %s; it cannot be used as a shared queue',
        to_json(queue)::text, to_json(existing.owner_flow)::text),
        context => jsonb_build_object('owner_flow', existing.owner_flow));
    end if;
    return 'registered';
  end if;
  if cardinality(switchyard._pgmq_spellings(queue)) > 0 then
    perform switchyard._refuse('23505', 'queue_not_in_catalog', 'queue_name', queue, format(
      'queue %s already exists in PGMQ (as %s) but is not in the switchyard registry; '
      'routed flows never adopt it implicitly: run select switchyard.adopt_queue(%L) first',
      to_json(queue)::text, array_to_string(switchyard._pgmq_spellings(queue), ', '),
      (switchyard._pgmq_spellings(queue))[1]),
      context => jsonb_build_object('pgmq_spellings', to_jsonb(switchyard._pgmq_spellings(queue))));
  end if;
  perform pgmq.create(queue);
  perform switchyard._tune_queue_table(queue);
  insert into switchyard.queues (queue_name, pgmq_name, ownership, owner_flow)
  values (queue, queue, 'shared', null);
  return 'created';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_alias_members_add.sql

-- The versions a registry lists for an alias, checked and recorded as its members
-- (docs/design/versions.md): each must be compiled and belong to no other alias. Shared by
-- sync_alias (a worker's start-up) and declare_alias (a compiled migration); the values it
-- echoes clipped.
create or replace function switchyard._alias_members_add(alias_name text, versions text[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  v text;
  other_alias text;
begin
  perform switchyard.assert_slug('alias', alias_name);
  if versions is null or cardinality(versions) = 0 then
    perform switchyard._refuse('22023', 'versions_missing', 'versions', versions::text, format(
      'alias %s lists no versions', switchyard._clip(alias_name)),
      context => jsonb_build_object('alias', alias_name));
  end if;
  if array_position(versions, null) is not null then
    perform switchyard._refuse('22023', 'version_null', 'versions', versions::text, format(
      'alias %s: version %s of %s is null: list the concrete flow slugs of the alias, oldest first',
      switchyard._clip(alias_name), array_position(versions, null), switchyard._clip(versions::text, 200)),
      context => jsonb_build_object('alias', alias_name, 'position', array_position(versions, null)));
  end if;
  perform switchyard._assert_alias_case(alias_name);
  foreach v in array versions loop
    if not exists (select 1 from switchyard.flows f where f.flow_slug = v) then
      perform switchyard._refuse('22023', 'flow_not_compiled', 'versions', v, format(
        'alias %s: flow %s is not compiled', switchyard._clip(alias_name), switchyard._clip(v)),
        context => jsonb_build_object('alias', alias_name));
    end if;
    select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = v;
    if other_alias is not null and other_alias <> alias_name then
      perform switchyard._refuse('23505', 'flow_in_other_alias', 'versions', v, format(
        'flow %s already belongs to alias %s; it cannot join alias %s',
        switchyard._clip(v), switchyard._clip(other_alias), switchyard._clip(alias_name)),
        context => jsonb_build_object('alias', alias_name, 'other_alias', other_alias));
    end if;
    insert into switchyard.alias_members (alias, flow_slug) values (alias_name, v)
    on conflict do nothing;
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_apply_flow_options.sql

-- Sets a compiled flow's runtime options (flows and steps rows) from a canonical shape, with
-- the ranges ensure_flow has always checked. Tasks created afterwards copy them.
create or replace function switchyard._apply_flow_options(slug text, canonical jsonb)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  what text := format('flow %s option', to_json(slug));
  step jsonb;
  step_what text;
  rate jsonb;
  conc jsonb;
begin
  perform switchyard._check_batch_option(slug, canonical);
  update switchyard.flows f
     set max_attempts = switchyard._int_option(canonical -> 'options', 'maxAttempts', what, 1, 1000, false),
         base_delay = switchyard._int_option(canonical -> 'options', 'baseDelay', what, 0, 86400, false),
         max_delay = coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', what, 0, 604800, true), 86400),
         timeout = switchyard._int_option(canonical -> 'options', 'timeout', what, 1, 86400, false),
         run_timeout = switchyard._int_option(canonical -> 'options', 'runTimeout', what, 1, 31536000, true),
         events = switchyard._bool_option(canonical -> 'options', 'events', what, true)
   where f.flow_slug = slug;
  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    step_what := format('step %s option', to_json(step ->> 'slug'));
    -- Flow control (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): JSON null means
    -- none.
    rate := nullif(step -> 'options' -> 'rateLimit', 'null'::jsonb);
    if rate is not null and (jsonb_typeof(rate) <> 'object'
        or jsonb_typeof(rate -> 'name') is distinct from 'string'
        or (rate ->> 'name') !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'
        or (rate - array['name', 'cost']) <> '{}'::jsonb) then
      perform switchyard._refuse('22023', 'rate_limit_invalid', 'rateLimit', rate::text, format(
        'flow %s %s rateLimit %s is invalid: use {"name": ..., "cost": 1} with a name of a '
        'letter or digit, then letters, digits, _ . : or - (at most 100)',
        to_json(slug)::text, step_what, left(rate::text, 200)),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step ->> 'slug'));
    end if;
    conc := nullif(step -> 'options' -> 'concurrency', 'null'::jsonb);
    if conc is not null and (jsonb_typeof(conc) <> 'object'
        or jsonb_typeof(conc -> 'key') is distinct from 'array'
        or jsonb_array_length(conc -> 'key') not between 1 and 8
        or exists (select 1 from jsonb_array_elements(conc -> 'key') k
                    where jsonb_typeof(k) <> 'string' or k #>> '{}' = '')
        or coalesce(conc ->> 'input', 'run') not in ('run', 'step')
        or (conc - array['key', 'input', 'limit']) <> '{}'::jsonb) then
      perform switchyard._refuse('22023', 'concurrency_invalid', 'concurrency', conc::text, format(
        'flow %s %s concurrency %s is invalid: use {"key": [1 to 8 keys], "input": "run" or '
        '"step", "limit": 1 to 10000}', to_json(slug)::text, step_what, left(conc::text, 200)),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step ->> 'slug'));
    end if;
    update switchyard.steps st
       set max_attempts = switchyard._int_option(step -> 'options', 'maxAttempts', step_what, 1, 1000, true),
           base_delay = switchyard._int_option(step -> 'options', 'baseDelay', step_what, 0, 86400, true),
           max_delay = switchyard._int_option(step -> 'options', 'maxDelay', step_what, 0, 604800, true),
           timeout = switchyard._int_option(step -> 'options', 'timeout', step_what, 1, 86400, true),
           start_delay = coalesce(switchyard._int_option(step -> 'options', 'startDelay', step_what, 0, 86400, true), 0),
           rate_limit = rate ->> 'name',
           rate_cost = coalesce(switchyard._int_option(rate, 'cost', step_what || ' rateLimit', 1, 1000, true), 1),
           concurrency_path = case when conc is not null then
             array(select k #>> '{}' from jsonb_array_elements(conc -> 'key') with ordinality e(k, o) order by o) end,
           concurrency_input = coalesce(conc ->> 'input', 'run'),
           concurrency_limit = switchyard._int_option(conc, 'limit', step_what || ' concurrency', 1, 10000, conc is null)
     where st.flow_slug = slug and st.step_slug = step ->> 'slug';
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_assert_alias_case.sql

-- Aliases are unique case-insensitively (docs/design/overview.md#identity-rules): refuses a name
-- that only
-- differs in case from an existing alias (or alias membership), naming both spellings, so
-- sync_alias and activate_alias answer with the rule instead of a raw unique-key error.
create or replace function switchyard._assert_alias_case(alias_name text)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  existing text;
begin
  select a.alias into existing from switchyard.aliases a
   where lower(a.alias) = lower(alias_name) and a.alias <> alias_name
   limit 1;
  if existing is null then
    select m.alias into existing from switchyard.alias_members m
     where lower(m.alias) = lower(alias_name) and m.alias <> alias_name
     limit 1;
  end if;
  if existing is not null then
    perform switchyard._refuse('23505', 'alias_case_collision', 'alias_name', alias_name, format(
      'alias %s collides with alias %s: aliases are unique case-insensitively; use %s',
      to_json(alias_name)::text, to_json(existing)::text, to_json(existing)::text),
      context => jsonb_build_object('existing_alias', existing));
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_bool_option.sql

-- A boolean option of a shape (the flow's events): absent or JSON null is the default.
create or replace function switchyard._bool_option(obj jsonb, key text, what text, fallback boolean)
returns boolean
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    return fallback;
  end if;
  if jsonb_typeof(v) <> 'boolean' then
    perform switchyard._refuse('22023', 'boolean', left(key, 200), v::text, format(
      '%s %s %s is invalid: use true or false', left(what, 200), left(key, 80), left(v::text, 80)),
      context => jsonb_build_object('context', left(what, 200)));
  end if;
  return v::text::boolean;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_canonical_shape.sql

-- Every option a shape can carry, with the value an absent key means (a wait or sleep step's
-- waitTimeout and onTimeout: only on such a step, which older runtimes never send).
create or replace function switchyard._canonical_shape(shape jsonb)
returns jsonb
language sql
immutable
set search_path = ''
as $$
  select case
    when jsonb_typeof(shape) is distinct from 'object'
      or jsonb_typeof(shape -> 'steps') is distinct from 'array'
      or jsonb_typeof(coalesce(shape -> 'options', '{}')) <> 'object' then shape
    else shape || jsonb_build_object(
      -- runTimeout (0.4.0) is absent when none, as the flow control options are; events
      -- (0.4.0) is absent when true (its default) or null.
      'options', ('{"maxAttempts": 3, "baseDelay": 1, "maxDelay": 86400, "timeout": 60}'::jsonb
                  || coalesce(shape -> 'options', '{}'))
                 - case when shape -> 'options' -> 'runTimeout' = 'null'::jsonb
                        then array['runTimeout'] else '{}'::text[] end
                 - case when shape -> 'options' -> 'events' in ('null'::jsonb, 'true'::jsonb)
                        then array['events'] else '{}'::text[] end
                 -- batch (docs/design/batching.md) is absent when none.
                 - case when shape -> 'options' -> 'batch' = 'null'::jsonb
                        then array['batch'] else '{}'::text[] end,
      'steps', coalesce((
        select jsonb_agg(case
                 when jsonb_typeof(s) = 'object'
                  and jsonb_typeof(coalesce(s -> 'options', '{}')) = 'object' then
                   '{"kind": "single", "dependsOn": []}'::jsonb || s || jsonb_build_object(
                     'options',
                     -- The flow control options (rateLimit, concurrency; 0.4.0) and a sleep's
                     -- sleepUntil are absent when none: a JSON null is their default,
                     -- canonically left out, so the shapes of earlier releases stay as they
                     -- were stored.
                     ('{"maxAttempts": null, "baseDelay": null, "maxDelay": null, "timeout": null,
                        "startDelay": 0, "if": null, "ifNot": null, "whenUnmet": "skip",
                        "whenExhausted": "fail"}'::jsonb
                      -- A wait or sleep step's own options (docs/design/waits.md).
                      || case when s ->> 'kind' in ('wait', 'sleep')
                              then '{"waitTimeout": null, "onTimeout": "fail"}'::jsonb
                              else '{}'::jsonb end
                      || coalesce(s -> 'options', '{}'))
                     - array(select k from unnest(array['rateLimit', 'concurrency', 'sleepUntil']) as k
                              where s -> 'options' -> k = 'null'::jsonb))
                 else s end
               order by o)
          from jsonb_array_elements(shape -> 'steps') with ordinality as e(s, o)), '[]'))
  end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_check_batch_option.sql

-- Checks a flow's `batch` option (docs/design/batching.md): {"maxSize": 1 to 10000, "timeout":
-- 1 to 86400 seconds}, both required, nothing else; absent or JSON null: the flow is not
-- batched. A batched run's input is the list of its events, so a step that reads a key of the
-- run input (a concurrency key or a sleepUntil with "input": "run") makes no sense there and is
-- refused (22023 batch_run_input_key). The option is part of the flow's structure (a version
-- takes single inputs or lists, never both): ensure_flow refuses changing it under one slug.
create or replace function switchyard._check_batch_option(slug text, canonical jsonb)
returns void
language plpgsql
immutable
set search_path = ''
as $$
declare
  batch jsonb := nullif(canonical -> 'options' -> 'batch', 'null'::jsonb);
  what text := format('flow %s option batch', to_json(slug));
  reader text;
begin
  if batch is null then
    return;
  end if;
  if jsonb_typeof(batch) <> 'object' or (batch - array['maxSize', 'timeout']) <> '{}'::jsonb then
    perform switchyard._refuse('22023', 'batch_invalid', 'batch', left(batch::text, 200), format(
      '%s %s is invalid: use {"maxSize": 1 to 10000, "timeout": 1 to 86400 seconds}',
      what, left(batch::text, 200)), context => jsonb_build_object('flow_slug', slug));
  end if;
  perform switchyard._int_option(batch, 'maxSize', what, 1, 10000, false);
  perform switchyard._int_option(batch, 'timeout', what, 1, 86400, false);
  select s ->> 'slug' into reader
    from jsonb_array_elements(canonical -> 'steps') as e(s)
   where coalesce(s -> 'options' -> 'concurrency' ->> 'input', 'run') = 'run'
         and nullif(s -> 'options' -> 'concurrency', 'null'::jsonb) is not null
      or coalesce(s -> 'options' -> 'sleepUntil' ->> 'input', 'run') = 'run'
         and nullif(s -> 'options' -> 'sleepUntil', 'null'::jsonb) is not null
   limit 1;
  if reader is not null then
    perform switchyard._refuse('22023', 'batch_run_input_key', 'batch', left(batch::text, 200),
      format('%s: step %s reads a key of the run input (a concurrency key or sleepUntil with '
        '"input": "run"), but a batched run''s input is the list of its events, which has no '
        'keys: read the key from a step''s input ("input": "step"), or do not batch this flow',
        what, to_json(reader)::text),
      context => jsonb_build_object('flow_slug', slug, 'step_slug', reader));
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_choice_option.sql

-- A text option of a shape that must be one of `choices` (whenUnmet, whenExhausted); absent or
-- null gives `fallback`. Refuses another value naming the choices (22023 option_choice).
create or replace function switchyard._choice_option(
  obj jsonb, key text, what text, choices text[], fallback text
)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    return fallback;
  end if;
  if jsonb_typeof(v) <> 'string' or not ((v #>> '{}') = any (choices)) then
    perform switchyard._refuse('22023', 'option_choice', key, v::text, format(
      '%s %s %s is invalid: use one of %s', what, key, v::text, array_to_string(choices, ', ')),
      context => jsonb_build_object('choices', to_jsonb(choices), 'context', what));
  end if;
  return v #>> '{}';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_int_option.sql

-- An integer option of a shape (maxAttempts, baseDelay, timeout, ...) within [min, max]; absent
-- or null gives `fallback`, or is refused when there is none (22023 option_missing,
-- integer_range). The value it echoes is clipped.
create or replace function switchyard._int_option(
  obj jsonb, key text, what text, min_value int, max_value int, nullable boolean
)
returns int
language plpgsql
immutable
set search_path = ''
as $$
declare
  v jsonb := obj -> key;
begin
  if v is null or v = 'null'::jsonb then
    if nullable then
      return null;
    end if;
    perform switchyard._refuse('22023', 'option_missing', left(key, 200), null,
      format('%s %s is missing', left(what, 200), left(key, 80)),
      context => jsonb_build_object('context', left(what, 200)));
  end if;
  if jsonb_typeof(v) <> 'number' or (v::text)::numeric <> trunc((v::text)::numeric)
     or (v::text)::numeric < min_value or (v::text)::numeric > max_value then
    perform switchyard._refuse('22023', 'integer_range', left(key, 200), v::text, format(
      '%s %s %s is invalid: use an integer from %s to %s', left(what, 200), left(key, 80),
      left(v::text, 80), min_value, max_value),
      context => jsonb_build_object('min', min_value, 'max', max_value, 'context', left(what, 200)));
  end if;
  return (v::text)::int;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/_record_activation.sql

-- Records one activation of an alias (docs/design/versions.md): every move of its one active
-- concrete version is kept, with the version before it and what moved it.
create or replace function switchyard._record_activation(
  alias_name text, target text, previous text, source text
)
returns void
language sql
volatile
set search_path = ''
as $$
  insert into switchyard.aliases as a (alias, flow_slug, activated_at)
  values (alias_name, target, switchyard.clock_now())
  on conflict (alias) do update set flow_slug = excluded.flow_slug, activated_at = excluded.activated_at;
  insert into switchyard.alias_activations (alias, flow_slug, previous_flow_slug, source)
  values (alias_name, target, previous, source);
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/activate_alias.sql

-- Makes a compiled concrete version the active target of an alias (docs/design/versions.md):
-- the operator's explicit move, recorded as an activation. Refuses an unknown or uncompiled
-- target and a name that differs from an existing alias only in case.
create or replace function switchyard.activate_alias(alias_name text, target_flow text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  previous text;
  other_alias text;
begin
  perform switchyard.assert_slug('alias', alias_name);
  perform switchyard._assert_alias_case(alias_name);
  if not exists (select 1 from switchyard.flows f where f.flow_slug = target_flow) then
    perform switchyard._refuse('22023', 'flow_not_compiled', 'target_flow', target_flow, format(
      'cannot activate alias %s: flow %s is not compiled', switchyard._clip(alias_name),
      switchyard._clip(target_flow)),
      context => jsonb_build_object('alias', alias_name));
  end if;
  select m.alias into other_alias from switchyard.alias_members m where m.flow_slug = target_flow;
  if other_alias is not null and other_alias <> alias_name then
    perform switchyard._refuse('23505', 'flow_in_other_alias', 'target_flow', target_flow, format(
      'cannot activate alias %s: flow %s belongs to alias %s',
      switchyard._clip(alias_name), switchyard._clip(target_flow), switchyard._clip(other_alias)),
      context => jsonb_build_object('alias', alias_name, 'other_alias', other_alias));
  end if;
  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  perform switchyard._assert_alias_case(alias_name);   -- again: another spelling may have won
  insert into switchyard.alias_members (alias, flow_slug) values (alias_name, target_flow)
  on conflict do nothing;
  select a.flow_slug into previous from switchyard.aliases a where a.alias = alias_name for update;
  perform switchyard._record_activation(alias_name, target_flow, previous, 'operator');
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/declare_alias.sql

-- The versions the project's registry declares for an alias, oldest first, the last one the
-- target: what `deno task compile` writes into a migration (docs/design/versions.md, Declared
-- aliases). Records the declaration (the latest replaces the one before), then moves the alias
-- to the target unless _alias_move_blocker says why not. So the compiled migrations, replayed
-- in any order on any database (incrementally, all at once on an empty one, after a backup),
-- leave each alias where the project's current registry puts it, without a worker: new, it is
-- activated; pointing at an earlier listed version, or at a retired one with no started run, it
-- moves when no live worker lacks the target. Otherwise it stays, and the answer says why:
-- 'activated', 'current', or 'deferred: <why>'. A held-back move is made by the first worker
-- whose registry has the target (sync_alias), or by the next declaration that may.
create or replace function switchyard.declare_alias(alias_name text, versions text[])
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  target text;
  current_target text;
  blocker text;
begin
  perform switchyard._alias_members_add(alias_name, versions);
  target := versions[cardinality(versions)];
  perform pg_advisory_xact_lock(hashtextextended('switchyard.alias:' || lower(alias_name), 0));
  insert into switchyard.alias_declarations as d (alias, versions, declared_at)
  values (alias_name, versions, switchyard.clock_now())
  on conflict (alias) do update set versions = excluded.versions, declared_at = excluded.declared_at;
  select a.flow_slug into current_target from switchyard.aliases a where a.alias = alias_name for update;
  if not found then
    perform switchyard._assert_alias_case(alias_name);   -- again: another spelling may have won
    perform switchyard._record_activation(alias_name, target, null, 'migration');
    return 'activated';
  elsif current_target = target then
    return 'current';
  end if;
  blocker := switchyard._alias_move_blocker(current_target, versions);
  if blocker is not null then
    raise notice 'alias % stays on %: %', alias_name, current_target, blocker;
    return 'deferred: ' || blocker;
  end if;
  perform switchyard._record_activation(alias_name, target, current_target, 'migration');
  return 'activated';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/delete_flow.sql

-- Deletes a concrete flow with its runs (docs/design/overview.md#queue-ownership): its private
-- queues are
-- dropped with it, shared queues are kept and only its own queued messages archived. Refuses an
-- alias target (55000 flow_is_alias_target). The values it echoes are clipped. A task still
-- running on it for a run moved off it is that run's: it names the run's flow from then on.
create or replace function switchyard.delete_flow(flow_slug text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  task record;
  q record;
  target_alias text;
begin
  perform pg_advisory_xact_lock(hashtextextended('switchyard.flow:' || lower(delete_flow.flow_slug), 0));
  if not exists (select 1 from switchyard.flows f where f.flow_slug = delete_flow.flow_slug) then
    perform switchyard._refuse('22023', 'flow_not_compiled', 'flow_slug', delete_flow.flow_slug,
      format(
      'cannot delete flow %s: it is not compiled', switchyard._clip(delete_flow.flow_slug)));
  end if;
  select a.alias into target_alias from switchyard.aliases a where a.flow_slug = delete_flow.flow_slug;
  if target_alias is not null then
    perform switchyard._refuse('55000', 'flow_is_alias_target', 'flow_slug', delete_flow.flow_slug,
      format(
      'cannot delete flow %s: it is the active target of alias %s; activate another version first',
      switchyard._clip(delete_flow.flow_slug), switchyard._clip(target_alias)),
      context => jsonb_build_object('alias', target_alias));
  end if;
  -- A run moved off this flow while a task of it ran (move_run, docs/design/rerun.md) is
  -- another flow's run: its running task names this flow until it ends. From here on it names
  -- its run's flow (the move's proof made the step the same there: kind and dependencies), so its
  -- answer still counts and deleting this flow takes nothing of that run.
  update switchyard.step_tasks t set flow_slug = r.flow_slug
    from switchyard.runs r
   where t.flow_slug = delete_flow.flow_slug and t.status = 'started'
     and r.run_id = t.run_id and r.flow_slug <> delete_flow.flow_slug;
  for task in
    select t.queue_name, t.message_id from switchyard.step_tasks t
     where t.flow_slug = delete_flow.flow_slug and t.status in ('queued', 'started')
     order by t.queue_name, t.message_id
     for update
  loop
    perform pgmq.archive(task.queue_name, task.message_id);
  end loop;
  delete from switchyard.runs r where r.flow_slug = delete_flow.flow_slug;
  delete from switchyard.alias_members m where m.flow_slug = delete_flow.flow_slug;
  delete from switchyard.flows f where f.flow_slug = delete_flow.flow_slug;
  for q in
    select x.queue_name, x.pgmq_name from switchyard.queues x
     where x.ownership = 'private' and x.owner_flow = delete_flow.flow_slug
  loop
    delete from switchyard.queues x where x.queue_name = q.queue_name;
    perform pgmq.drop_queue(q.pgmq_name);
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/ensure_flow.sql

-- Compiles or verifies a flow's shape
-- (docs/design/worker.md#compiling-at-deploy-and-in-local-development,
-- docs/design/testing.md#upgrades-with-work-in-flight): shapes compare canonically; a
-- change of runtime options only is applied and recorded ('updated'); any other change is
-- SY004. New flows store their canonical shape.
create or replace function switchyard.ensure_flow(shape jsonb)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  slug text;
  placement text;
  existing switchyard.flows;
  canonical jsonb;
  existing_canonical jsonb;
  step jsonb;
  step_slug text;
  step_queue text;
  step_kind text;
  expected_queue text;
  sleep_until jsonb;
  dep jsonb;
  seen_steps text[] := '{}';
  deps_seen text[];
  diffs text[];
  i int := 0;
begin
  if shape is null or jsonb_typeof(shape) <> 'object' then
    perform switchyard._refuse('22023', 'shape_not_object', 'shape', shape::text,
      'flow shape must be a JSON object');
  end if;
  slug := switchyard.assert_slug('flow', shape ->> 'slug');
  placement := shape ->> 'placement';
  if placement is null or placement not in ('plain', 'step_queues', 'routed') then
    perform switchyard._refuse('22023', 'placement_invalid', 'placement', shape ->> 'placement',
      format(
      'flow %s placement %s is invalid: use plain, step_queues or routed',
      to_json(slug)::text, coalesce(shape -> 'placement', 'null'::jsonb)::text),
      context => jsonb_build_object('flow_slug', slug));
  end if;
  if jsonb_typeof(coalesce(shape -> 'options', '{}')) <> 'object' then
    perform switchyard._refuse('22023', 'options_not_object', 'options', (shape -> 'options')::text,
      format(
      'flow %s options must be a JSON object', to_json(slug)::text),
      context => jsonb_build_object('flow_slug', slug));
  end if;
  if jsonb_typeof(shape -> 'steps') is distinct from 'array' or jsonb_array_length(shape -> 'steps') = 0 then
    perform switchyard._refuse('22023', 'steps_missing', 'steps', (shape -> 'steps')::text, format(
      'flow %s has no steps: add at least one step', to_json(slug)::text),
      context => jsonb_build_object('flow_slug', slug));
  end if;
  canonical := switchyard._canonical_shape(shape);

  -- Concurrent workers compiling the same flow serialize here.
  perform pg_advisory_xact_lock(hashtextextended('switchyard.flow:' || lower(slug), 0));

  select * into existing from switchyard.flows f where lower(f.flow_slug) = lower(slug);
  if found then
    if existing.flow_slug <> slug then
      perform switchyard._refuse('23505', 'flow_slug_case_collision', 'flow_slug', slug, format(
        'flow slug %s collides with compiled flow %s: slugs are unique case-insensitively',
        to_json(slug)::text, to_json(existing.flow_slug)::text),
        context => jsonb_build_object('existing_flow_slug', existing.flow_slug));
    end if;
    existing_canonical := switchyard._canonical_shape(existing.shape);
    if existing_canonical = canonical then
      return 'verified';
    end if;
    if switchyard._shape_structure(existing_canonical) is distinct from switchyard._shape_structure(canonical) then
      diffs := switchyard._shape_diff(switchyard._shape_structure(existing_canonical),
                                      switchyard._shape_structure(canonical));
      raise exception using errcode = 'SY004', message = format(
        'flow %s is already compiled with a different shape (%s); the steps, dependencies, '
        'kinds, conditions and queues of a concrete flow never change (its runtime options '
        'may): deploy the change under a new slug (for example %s)',
        to_json(slug)::text, array_to_string(diffs, '; '), to_json(switchyard._next_flow_slug(slug))::text),
        detail = jsonb_build_object(
          'flow_slug', slug,
          'differences', (select jsonb_agg(left(d, 200) order by o)
                            from unnest(diffs) with ordinality as x(d, o)))::text;
    end if;
    -- Runtime options only: applied for tasks created from now on, and recorded.
    diffs := switchyard._shape_diff(existing_canonical, canonical);
    perform switchyard._apply_flow_options(slug, canonical);
    update switchyard.flows f set shape = canonical where f.flow_slug = slug;
    insert into switchyard.flow_option_changes
      (flow_slug, changed_by, application_name, old_options, new_options, differences)
    values (slug, session_user, nullif(current_setting('application_name', true), ''),
            switchyard._shape_options(existing_canonical), switchyard._shape_options(canonical),
            diffs);
    return 'updated';
  end if;

  insert into switchyard.flows (flow_slug, placement, max_attempts, base_delay, max_delay, timeout, shape,
                                run_timeout, events)
  values (slug, placement,
    switchyard._int_option(canonical -> 'options', 'maxAttempts', format('flow %s option', to_json(slug)), 1, 1000, false),
    switchyard._int_option(canonical -> 'options', 'baseDelay', format('flow %s option', to_json(slug)), 0, 86400, false),
    coalesce(switchyard._int_option(canonical -> 'options', 'maxDelay', format('flow %s option', to_json(slug)), 0, 604800, true), 86400),
    switchyard._int_option(canonical -> 'options', 'timeout', format('flow %s option', to_json(slug)), 1, 86400, false),
    canonical,
    switchyard._int_option(canonical -> 'options', 'runTimeout', format('flow %s option', to_json(slug)), 1, 31536000, true),
    switchyard._bool_option(canonical -> 'options', 'events', format('flow %s option', to_json(slug)), true));

  for step in select value from jsonb_array_elements(canonical -> 'steps') loop
    if jsonb_typeof(step) <> 'object' then
      perform switchyard._refuse('22023', 'step_not_object', 'steps', step::text, format(
        'flow %s step #%s must be a JSON object', to_json(slug)::text, i),
        context => jsonb_build_object('flow_slug', slug));
    end if;
    step_slug := switchyard.assert_slug('step', step ->> 'slug');
    if lower(step_slug) = any (select lower(s) from unnest(seen_steps) s) then
      perform switchyard._refuse('22023', 'step_slug_duplicate', 'step_slug', step_slug, format(
        'flow %s lists step %s twice: step slugs are unique case-insensitively',
        to_json(slug)::text, to_json(step_slug)::text),
        context => jsonb_build_object('flow_slug', slug));
    end if;
    if (step -> 'index') is distinct from to_jsonb(i) then
      perform switchyard._refuse('22023', 'step_index_order', 'index', (step -> 'index')::text,
        format(
        'flow %s step %s has index %s: steps must be listed in index order from 0',
        to_json(slug)::text, to_json(step_slug)::text, coalesce(step -> 'index', 'null'::jsonb)),
        context => jsonb_build_object('expected', i, 'flow_slug', slug, 'step_slug', step_slug));
    end if;
    step_queue := step ->> 'queue';
    step_kind := step ->> 'kind';
    if step_kind in ('wait', 'sleep', 'flow') then
      -- A wait, sleep or flow step (docs/design/waits.md) has no task, so no queue.
      if step_queue is not null then
        perform switchyard._refuse('22023', 'wait_queue', 'queue', step_queue, format(
          'flow %s step %s: a %s step uses no queue, not %s',
          to_json(slug)::text, to_json(step_slug)::text, step_kind, to_json(step_queue)::text),
          context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
      end if;
      expected_queue := null;
    elsif placement = 'plain' then
      expected_queue := lower(slug);
    elsif placement = 'step_queues' then
      expected_queue := switchyard.step_queue_name(slug, step_slug, i);
    else
      expected_queue := null;
    end if;
    if expected_queue is not null and step_queue is distinct from expected_queue then
      perform switchyard._refuse('22023', 'placement_queue', 'queue', step_queue, format(
        'flow %s step %s: a %s flow must use queue %s, not %s',
        to_json(slug)::text, to_json(step_slug)::text, placement, to_json(expected_queue)::text,
        coalesce(to_json(step_queue)::text, 'null')),
        context => jsonb_build_object('expected', expected_queue, 'placement', placement,
          'flow_slug', slug, 'step_slug', step_slug));
    end if;
    if step_kind in ('wait', 'sleep', 'flow') then
      null;
    elsif placement = 'routed' then
      perform switchyard.ensure_shared_queue(step_queue);
    else
      perform switchyard._ensure_private_queue(step_queue, slug);
    end if;

    if jsonb_typeof(step -> 'dependsOn') <> 'array' then
      perform switchyard._refuse('22023', 'depends_on_not_array', 'dependsOn',
        (step -> 'dependsOn')::text, format(
        'flow %s step %s: dependsOn must be an array of step slugs', to_json(slug)::text, to_json(step_slug)::text),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    if jsonb_typeof(step -> 'options') <> 'object' then
      perform switchyard._refuse('22023', 'options_not_object', 'options',
        (step -> 'options')::text, format(
        'flow %s step %s: options must be a JSON object', to_json(slug)::text, to_json(step_slug)::text),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    -- A map step (docs/design/runs.md#map-steps) reads its array from the run input (no
    -- dependency) or from its one dependency.
    if step_kind is null or step_kind not in ('single', 'map', 'wait', 'sleep', 'flow') then
      perform switchyard._refuse('22023', 'step_kind_invalid', 'kind', (step -> 'kind')::text,
        format(
        'flow %s step %s kind %s is invalid: use single, map, wait, sleep or flow',
        to_json(slug)::text, to_json(step_slug)::text, (step -> 'kind')::text),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    if step_kind = 'map' and jsonb_array_length(step -> 'dependsOn') > 1 then
      perform switchyard._refuse('22023', 'map_dependencies', 'dependsOn',
        (step -> 'dependsOn')::text, format(
        'flow %s map step %s depends on %s steps: a map reads one array, from the flow input '
        '(no dependency) or from one step', to_json(slug)::text, to_json(step_slug)::text,
        jsonb_array_length(step -> 'dependsOn')),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    -- A sleep until a time read from the input (docs/design/waits.md): a path of 1 to
    -- 8 keys and the input it is read from, instead of a length in seconds.
    sleep_until := nullif(step -> 'options' -> 'sleepUntil', 'null'::jsonb);
    if sleep_until is not null and (step_kind <> 'sleep' or jsonb_typeof(sleep_until) <> 'object'
        or jsonb_typeof(sleep_until -> 'key') is distinct from 'array'
        or jsonb_array_length(sleep_until -> 'key') not between 1 and 8
        or exists (select 1 from jsonb_array_elements(sleep_until -> 'key') k
                    where jsonb_typeof(k) <> 'string' or k #>> '{}' = '')
        or coalesce(sleep_until ->> 'input', 'run') not in ('run', 'step')
        or (sleep_until - array['key', 'input']) <> '{}'::jsonb
        or nullif(step -> 'options' -> 'waitTimeout', 'null'::jsonb) is not null) then
      perform switchyard._refuse('22023', 'sleep_until_invalid', 'sleepUntil', sleep_until::text,
        format(
        'flow %s step %s sleepUntil %s is invalid: a sleep step takes {"key": [1 to 8 keys], '
        '"input": "run" or "step"} instead of a waitTimeout (no other kind takes one)',
        to_json(slug)::text, to_json(step_slug)::text, left(sleep_until::text, 200)),
        context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
    end if;
    -- Runtime options are set below by _apply_flow_options, with their ranges.
    insert into switchyard.steps (flow_slug, step_slug, step_index, queue_name, deps_count,
                                  step_type, cond_if, cond_if_not, when_unmet, when_exhausted,
                                  wait_timeout, on_timeout, child_alias, sleep_until,
                                  sleep_until_input)
    values (slug, step_slug, i, step_queue, jsonb_array_length(step -> 'dependsOn'),
      step_kind,
      -- Conditions are JSON patterns for @> (docs/design/runs.md#ready-steps-conditions-and-skips);
      -- JSON null means none.
      nullif(step -> 'options' -> 'if', 'null'::jsonb),
      nullif(step -> 'options' -> 'ifNot', 'null'::jsonb),
      switchyard._choice_option(step -> 'options', 'whenUnmet', format('step %s option', to_json(step_slug)),
                                array['skip', 'skip-cascade', 'fail'], 'skip'),
      switchyard._choice_option(step -> 'options', 'whenExhausted', format('step %s option', to_json(step_slug)),
                                array['fail', 'skip', 'skip-cascade', 'pause'], 'fail'),
      -- A wait's timeout (none: null) and what it does; a sleep's length, required unless it
      -- sleeps until a time.
      switchyard._int_option(step -> 'options', 'waitTimeout', format('step %s option', to_json(step_slug)),
                             1, 31536000, step_kind <> 'sleep' or sleep_until is not null),
      switchyard._choice_option(step -> 'options', 'onTimeout', format('step %s option', to_json(step_slug)),
                                array['fail', 'skip'], 'fail'),
      -- A flow step's alias (checked as an alias slug; it need not exist yet).
      case when step_kind = 'flow'
           then switchyard.assert_slug('alias', step -> 'options' ->> 'childAlias') end,
      case when sleep_until is not null then
        array(select k #>> '{}' from jsonb_array_elements(sleep_until -> 'key') with ordinality e(k, o)
               order by o) end,
      case when sleep_until is not null then coalesce(sleep_until ->> 'input', 'run') end);

    deps_seen := '{}';
    for dep in select value from jsonb_array_elements(step -> 'dependsOn') loop
      if jsonb_typeof(dep) <> 'string' or not ((dep #>> '{}') = any (seen_steps)) then
        perform switchyard._refuse('22023', 'dependency_not_earlier_step', 'dependsOn',
          coalesce(dep #>> '{}', dep::text), format(
          'flow %s step %s depends on %s, which is not an earlier step of the flow',
          to_json(slug)::text, to_json(step_slug)::text, dep::text),
          context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
      end if;
      if (dep #>> '{}') = any (deps_seen) then
        perform switchyard._refuse('22023', 'dependency_duplicate', 'dependsOn', dep #>> '{}',
          format(
          'flow %s step %s lists dependency %s twice', to_json(slug)::text, to_json(step_slug)::text, dep::text),
          context => jsonb_build_object('flow_slug', slug, 'step_slug', step_slug));
      end if;
      deps_seen := deps_seen || (dep #>> '{}');
      insert into switchyard.deps (flow_slug, dep_slug, step_slug) values (slug, dep #>> '{}', step_slug);
    end loop;
    seen_steps := seen_steps || step_slug;
    i := i + 1;
  end loop;
  perform switchyard._apply_flow_options(slug, canonical);
  return 'created';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/flow_option_history.sql

-- The recorded option changes, newest first; of one flow when of_flow is given.
create or replace function switchyard.flow_option_history(of_flow text default null, max_rows int default 100)
returns table (
  change_id bigint, flow_slug text, changed_at timestamptz, changed_by text,
  application_name text, old_options jsonb, new_options jsonb, differences text[]
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if max_rows is null or max_rows < 1 or max_rows > 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'max_rows', max_rows::text, format(
      'flow_option_history max_rows %s is invalid: use an integer from 1 to 10000',
      coalesce(max_rows::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  return query
    select c.change_id, c.flow_slug, c.changed_at, c.changed_by, c.application_name,
           c.old_options, c.new_options, c.differences
      from switchyard.flow_option_changes c
     where of_flow is null or c.flow_slug = of_flow
     order by c.change_id desc
     limit max_rows;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flows/step_queue_name.sql

-- The generated private queue of one step (withStepQueues, docs/design/overview.md#layers):
-- lower(flow__step) when that is at most 47 characters, else lower(flow__<stepIndex>), else a
-- refusal (22023 private_queue_name_too_long). Never truncated or hashed.
create or replace function switchyard.step_queue_name(flow_slug text, step_slug text, step_index int)
returns text
language plpgsql
immutable
set search_path = ''
as $$
begin
  if length(flow_slug) + 2 + length(step_slug) <= 47 then
    return lower(flow_slug || '__' || step_slug);
  elsif length(flow_slug) + 2 + length(step_index::text) <= 47 then
    return lower(flow_slug || '__' || step_index::text);
  end if;
  perform switchyard._refuse('22023', 'private_queue_name_too_long', 'step_slug', step_slug, format(
    'no private queue name fits for step %s of flow %s: both %s and %s exceed 47 characters',
    switchyard._clip(step_slug), switchyard._clip(flow_slug),
    switchyard._clip(lower(flow_slug || '__' || step_slug)),
    switchyard._clip(lower(flow_slug || '__' || step_index::text))),
    context => jsonb_build_object('flow_slug', left(flow_slug, 200), 'step_index', step_index));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_batch_event.sql

-- One event of a batched flow (docs/design/batching.md), from start_flow(..., batch_key) or a
-- row trigger's batch, in the caller's transaction: it joins the open batch of
-- (started_as, batch_key), opening one when there is none, and closes the batch when it is full
-- (maxSize events; or a list that would pass max_input_bytes with this event, which then opens
-- the next batch). Answers the id of the run the batch becomes.
--
-- Exactly one batch per event: the open batch's row is locked (FOR UPDATE), or inserted
-- ON CONFLICT DO NOTHING on (started_as, batch_key), so writers of one key take turns and a
-- second opener waits for the first's transaction, then finds its batch (or, if it rolled back,
-- opens one). The tick (close_batches) skips a batch a writer holds; a writer waiting on a batch
-- the tick is closing finds it gone when the tick commits (READ COMMITTED re-reads the row) and
-- opens the next. A rolled back event leaves nothing: its event row, the batch it opened and a
-- close it caused go with its transaction. `refused_with` names an option given with the batch
-- key (start_flow's), which is refused.
create or replace function switchyard._batch_event(
  started_as text, input jsonb, batch_key text, refused_with text default null
)
returns uuid
language plpgsql
volatile
set search_path = ''
as $$
declare
  concrete text;
  options jsonb;
  b switchyard.batches;
  event_bytes bigint := octet_length(input::text) + 2;
  max_bytes int := switchyard.limit_value('max_input_bytes');
begin
  if refused_with is not null then
    perform switchyard._refuse('22023', 'batch_key_alone', refused_with, batch_key, format(
      'start_flow(%s): batch_key %s comes with %s: an event of a batch takes no run id, owner, '
      'start or deadline time, start key, trace context or priority (the batch''s run is '
      'started when the batch closes); start without them',
      switchyard._clip(started_as), switchyard._clip(batch_key), refused_with));
  end if;
  if length(batch_key) not between 1 and 200 then
    perform switchyard._refuse('22023', 'batch_key_length', 'batch_key', batch_key, format(
      'start_flow(%s): batch_key %s is invalid: use 1 to 200 characters',
      switchyard._clip(started_as), switchyard._clip(batch_key)),
      context => jsonb_build_object('min', 1, 'max', 200));
  end if;
  concrete := switchyard.resolve_flow(started_as);
  select nullif(f.shape -> 'options' -> 'batch', 'null'::jsonb) into options
    from switchyard.flows f where f.flow_slug = concrete;
  if options is null then
    perform switchyard._refuse('22023', 'batch_not_declared', 'batch_key', batch_key, format(
      'start_flow(%s): batch_key %s is refused: flow %s has no batch option; declare '
      'batch: { maxSize, timeout } on the flow, or start without a batch key',
      switchyard._clip(started_as), switchyard._clip(batch_key), to_json(concrete)::text),
      context => jsonb_build_object('flow_slug', concrete));
  end if;
  -- The list [e1, e2] is 2 bytes of brackets and each event's text with ", ": a single event
  -- that could never fit is refused as start_flow refuses any input over the limit.
  if 2 + event_bytes > max_bytes then
    perform switchyard._refuse('22023', 'max_input_bytes', 'input', left(input::text, 200), format(
      'start_flow(%s): event is %s bytes of JSON: a batch of it alone would be over the limit of '
      '%s bytes (setting max_input_bytes)', switchyard._clip(started_as), event_bytes - 2,
      max_bytes),
      context => jsonb_build_object('size', event_bytes - 2, 'limit', max_bytes));
  end if;
  loop
    select * into b from switchyard.batches x
     where x.started_as = _batch_event.started_as and x.batch_key = _batch_event.batch_key
       for update;
    if not found then
      insert into switchyard.batches (started_as, batch_key, run_id, max_size, timeout,
                                      close_at)
      values (_batch_event.started_as, _batch_event.batch_key, gen_random_uuid(),
              (options ->> 'maxSize')::int, (options ->> 'timeout')::int,
              switchyard.clock_now() + (options ->> 'timeout')::int * interval '1 second')
      on conflict on constraint batches_open_key do nothing
      returning * into b;
      exit when b.batch_id is not null;
      continue;
    end if;
    -- Full by bytes: this event would make the run input too large; the batch closes and the
    -- event opens the next one.
    if b.bytes + event_bytes > max_bytes then
      perform switchyard._close_batch(b.batch_id, 'bytes');
      continue;
    end if;
    exit;
  end loop;
  insert into switchyard.batch_events (batch_id, seq, input)
  values (b.batch_id, b.size + 1, input);
  update switchyard.batches x set size = x.size + 1, bytes = x.bytes + event_bytes
   where x.batch_id = b.batch_id;
  if b.size + 1 >= b.max_size then
    perform switchyard._close_batch(b.batch_id, 'size');
  end if;
  return b.run_id;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_check_run_input.sql

-- Flow input: refused at start_flow (the run's row), before anything is sent.
create or replace function switchyard._check_run_input()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem jsonb := switchyard._json_size_problem(new.input, 'max_input_bytes');
begin
  if problem is not null then
    perform switchyard._refuse('22023', 'max_input_bytes', 'input', problem ->> 'excerpt', format(
      'start_flow(%s): input is %s bytes of JSON, over the limit of %s bytes (setting max_input_bytes)',
      switchyard._clip(new.started_as), problem ->> 'size', problem ->> 'limit'),
      context => jsonb_build_object('size', (problem ->> 'size')::bigint,
        'limit', (problem ->> 'limit')::int),
      hint => 'send a smaller input (store large data elsewhere and pass a reference), or raise '
             'the limit: select switchyard.set_setting(''max_input_bytes'', ''<bytes>'')');
  end if;
  return new;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_check_start_key.sql

-- Refuses (22023) a start_flow whose start key arguments do not fit together
-- (docs/design/flow-control.md#start-keys): mode, ttl, delay and max_delay need a key; a key needs
-- a mode
-- and no run_id (each names the run); ttl is dedupe's, delay and max_delay debounce's, and a
-- debounce sets its own start, so it takes no start_at.
create or replace function switchyard._check_start_key(
  flow_or_alias text, run_id uuid, start_at timestamptz, key text, mode text, ttl int,
  delay int, max_delay int
)
returns void
language plpgsql
immutable
set search_path = ''
as $$
declare
  problem text;
  argument text;
  value text;
  hint text;
begin
  if key is null then
    select a.name, a.value into argument, value
      from (values (1, 'mode', mode), (2, 'ttl', ttl::text), (3, 'delay', delay::text),
                   (4, 'max_delay', max_delay::text)) as a(n, name, value)
     where a.value is not null order by a.n limit 1;
    if argument is null then
      return;
    end if;
    problem := 'key_required';
    hint := 'it applies to a start with a key: pass key too';
  elsif char_length(key) not between 1 and 200 then
    problem := 'key_length'; argument := 'key'; value := key;
    hint := 'use a key of 1 to 200 characters';
  elsif run_id is not null then
    problem := 'key_with_run_id'; argument := 'run_id'; value := run_id::text;
    hint := 'a key and a run id each name the run: pass one of them';
  elsif mode is null or mode not in ('singleton', 'dedupe', 'debounce') then
    problem := 'mode_unknown'; argument := 'mode'; value := mode;
    hint := 'use mode ''singleton'', ''dedupe'' or ''debounce'' with a key';
  elsif ttl is not null and mode <> 'dedupe' then
    problem := 'ttl_dedupe_only'; argument := 'ttl'; value := ttl::text;
    hint := 'ttl is how long a dedupe key is kept after its run ended: use it with mode ''dedupe''';
  elsif ttl not between 1 and 31536000 then
    problem := 'ttl_range'; argument := 'ttl'; value := ttl::text;
    hint := 'use a ttl of 1 to 31536000 seconds';
  elsif mode <> 'debounce' and (delay is not null or max_delay is not null) then
    problem := 'delay_debounce_only';
    argument := case when delay is not null then 'delay' else 'max_delay' end;
    value := coalesce(delay, max_delay)::text;
    hint := 'delay and max_delay are a debounce''s: use them with mode ''debounce''';
  elsif mode = 'debounce' and (delay is null or delay not between 1 and 31536000) then
    problem := 'delay_range'; argument := 'delay'; value := delay::text;
    hint := 'a debounce needs a delay of 1 to 31536000 seconds after the last start';
  elsif mode = 'debounce' and max_delay not between delay and 31536000 then
    problem := 'max_delay_range'; argument := 'max_delay'; value := max_delay::text;
    hint := format('use a max_delay from delay (%s) to 31536000 seconds', delay);
  elsif mode = 'debounce' and start_at is not null then
    problem := 'debounce_start_at'; argument := 'start_at'; value := start_at::text;
    hint := 'a debounce starts delay seconds after the last start: pass no start_at';
  else
    return;
  end if;
  perform switchyard._refuse('22023', problem, argument, value, format(
    'start_flow(%s): %s %s is invalid: %s',
    switchyard._clip(flow_or_alias), argument, switchyard._clip(value), hint));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_close_batch.sql

-- Closes an open batch the caller holds locked (docs/design/batching.md): starts its run (the
-- id chosen when it opened) with the list of its events in the order they joined and its origin
-- {kind: 'batch', key, size, closed} (docs/design/origins.md), records the batch in its
-- 'started' event's data as well ({"batch": {"key", "size", "closed", "opened_at"}}; `reason`
-- 'size', 'bytes' or 'timeout'), and deletes the batch and its events,
-- all in the caller's transaction. The next event of the key opens a new batch.
create or replace function switchyard._close_batch(batch bigint, reason text)
returns uuid
language plpgsql
volatile
set search_path = ''
as $$
declare
  b switchyard.batches;
  events jsonb;
begin
  select * into b from switchyard.batches x where x.batch_id = batch;
  select jsonb_agg(e.input order by e.seq) into events
    from switchyard.batch_events e where e.batch_id = batch;
  perform switchyard.start_flow(b.started_as, events, run_id => b.run_id,
    origin => jsonb_build_object('kind', 'batch', 'key', b.batch_key, 'size', b.size,
                                 'closed', reason));
  update switchyard.run_events ev
     set data = coalesce(ev.data, '{}'::jsonb) || jsonb_build_object('batch', jsonb_build_object(
           'key', b.batch_key, 'size', b.size, 'closed', reason, 'opened_at', b.opened_at))
   where ev.run_id = b.run_id and ev.step_slug is null and ev.event = 'started';
  delete from switchyard.batches x where x.batch_id = batch;
  return b.run_id;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_complete_run_if_done.sql

-- Completes a started run none of whose steps is left (every one completed or skipped), with
-- its leaf outputs (complete_tasks completes the runs its batch finishes in its count-down).
create or replace function switchyard._complete_run_if_done(run uuid)
returns void
language sql
volatile
set search_path = ''
as $$
  update switchyard.runs r
     set status = 'completed', completed_at = switchyard.clock_now(),
         output = switchyard._run_output(r.run_id, r.flow_slug)
   where r.run_id = run and r.status = 'started' and r.remaining_steps = 0
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_complete_without_tasks.sql

-- A step that is done without a task (an empty map: output []): completes its state, counts
-- the run and its waiting dependents down.
create or replace function switchyard._complete_without_tasks(
  run uuid, flow text, step text, step_output jsonb
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'completed', completed_at = switchyard.clock_now(), output = step_output, remaining_tasks = 0,
         wait_due = null
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - 1
    from switchyard.deps d
   where d.flow_slug = flow and d.dep_slug = step
     and ss.run_id = run and ss.step_slug = d.step_slug;
  update switchyard.runs r set remaining_steps = r.remaining_steps - 1 where r.run_id = run;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_downstream_steps.sql

-- The steps of `flow` that depend on any of `seeds`, transitively, with the seeds themselves
-- (those of the flow), in step order: what a rerun from a step runs again (rerun_run, fork_run).
create or replace function switchyard._downstream_steps(flow text, seeds text[])
returns text[]
language sql
stable
set search_path = ''
as $$
  with recursive down(step_slug) as (
    select st.step_slug from switchyard.steps st
     where st.flow_slug = flow and st.step_slug = any (seeds)
    union
    select d.step_slug from switchyard.deps d join down on d.dep_slug = down.step_slug
     where d.flow_slug = flow
  )
  select coalesce(array_agg(st.step_slug order by st.step_index), '{}')
    from switchyard.steps st
   where st.flow_slug = flow and st.step_slug in (select down.step_slug from down)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_fail_run_step.sql

-- Fails a step and its run without a task attempt (an unmet condition with whenUnmet
-- 'fail'); the run's queued messages are archived.
create or replace function switchyard._fail_run_step(run uuid, step text, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  update switchyard.step_states ss
     set status = 'failed', failed_at = switchyard.clock_now(), wait_due = null
   where ss.run_id = run and ss.step_slug = step;
  update switchyard.runs r
     set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
   where r.run_id = run and r.status = 'started';
  perform switchyard._archive_queued(run);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_fail_run_unforeseen.sql

-- Fails a started run for an error no rule of the SQL core foresaw (a bug, a value that got past
-- every check), raised while a tick or a completion worked on that run alone: the run fails
-- naming what was being done, the error and its SQLSTATE, and its queued messages are
-- archived, so the rest of the tick or the completion of a valid output goes on (docs/
-- docs/design/waits.md, "One run's bad value is that run's problem"). Step states are left as
-- they were: retry_run starts the run again where it stopped once the cause is fixed. The
-- caller's subtransaction that raised is rolled back; the run's row lock is taken again here.
-- Returns whether the run was failed (false: it is no longer started).
create or replace function switchyard._fail_run_unforeseen(
  run uuid, what text, err_state text, err_message text
)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
begin
  perform 1 from switchyard.runs r where r.run_id = run and r.status = 'started' for update;
  if not found then
    return false;
  end if;
  update switchyard.runs r
     set status = 'failed', failed_at = switchyard.clock_now(),
         error = format('%s: %s (SQLSTATE %s); only this run failed: retry it once the cause is '
                        'fixed', what, switchyard._clip(err_message, 500), err_state)
   where r.run_id = run;
  perform switchyard._archive_queued(run);
  return true;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_flow_alias.sql

-- The alias a concrete flow is a version of (docs/design/versions.md): the alias that lists it
-- as a member, else one whose active version it is; null for a flow of no alias. Fork and move
-- go only between versions of one alias (docs/design/rerun.md).
create or replace function switchyard._flow_alias(flow text)
returns text
language sql
stable
set search_path = ''
as $$
  select coalesce(
    (select m.alias from switchyard.alias_members m where m.flow_slug = flow),
    (select min(a.alias) from switchyard.aliases a where a.flow_slug = flow))
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_follow_run_flow.sql

-- Puts a queued task of a moved run onto its run's version (docs/design/rerun.md). A task
-- names the version that queued it; move_run moves a run's queued tasks at once and leaves a
-- running one naming the version its worker runs (drain_status counts it there until it ends).
-- When such a task is queued again — a retry (fail_task_with), a hand-back (release_tasks), a
-- stall (recover_stalled), retry_run, resume_run, or a move after one of those — it follows the run: it names
-- the run's version and, when its step has another queue there, its message is archived and sent
-- again on that queue `delay` seconds on, so only the new version's workers claim it. The caller
-- holds the task; the run is held here (for share: a move in flight is waited for, and its
-- version read once it committed; the caller's order, task then run, is complete_tasks'). Nothing happens to a task that is not queued or that names its
-- run's version already, so a caller may call it for any task it just queued.
create or replace function switchyard._follow_run_flow(
  run uuid, step text, idx int, delay int
)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  task record;
  placed record;
  msg_id bigint;
begin
  select t.queue_name, t.message_id, t.flow_slug, r.flow_slug as run_flow, r.priority
    into task
    from switchyard.step_tasks t
    join switchyard.runs r on r.run_id = t.run_id
   where t.run_id = run and t.step_slug = step and t.task_index = idx and t.status = 'queued'
     for share of r;
  if not found or task.flow_slug = task.run_flow then
    return;
  end if;
  select st.queue_name, st.concurrency_limit into placed
    from switchyard.steps st where st.flow_slug = task.run_flow and st.step_slug = step;
  if placed.queue_name is distinct from task.queue_name then
    perform pgmq.archive(task.queue_name, task.message_id);
    select s into msg_id from pgmq.send(
      placed.queue_name,
      switchyard._task_message(
        run, task.run_flow, step, nullif(idx, 0), task.priority, delay,
        case when placed.concurrency_limit is not null
             then switchyard._concurrency_key(run, task.run_flow, step, idx) end),
      greatest(coalesce(delay, 0), 0)) s;
    update switchyard.step_tasks t
       set flow_slug = task.run_flow, queue_name = placed.queue_name, message_id = msg_id
     where t.run_id = run and t.step_slug = step and t.task_index = idx;
  else
    update switchyard.step_tasks t set flow_slug = task.run_flow
     where t.run_id = run and t.step_slug = step and t.task_index = idx;
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_pause_run.sql

-- Pauses a started run (docs/design/rerun.md) whose row lock the caller holds: pause_run,
-- or a step's whenExhausted 'pause' (_exhaust_task). The messages of its queued tasks are hidden
-- for pause_hide_seconds() so no worker reads them; one read meanwhile (a successor queued by a
-- task that finished, a message read just before) is classified 'paused' by the claim and hidden
-- again (classify_batch, start_tasks). Tasks a worker runs finish as usual. Records a 'paused'
-- event with the reason and who paused it. Returns false when the run was paused already (its
-- first reason is kept).
create or replace function switchyard._pause_run(run uuid, reason text, actor text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  q record;
begin
  update switchyard.runs r
     set paused_at = switchyard.clock_now(), pause_reason = left(reason, 4000)
   where r.run_id = run and r.paused_at is null;
  if not found then
    return false;
  end if;
  for q in
    select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
      from switchyard.step_tasks t
     where t.run_id = run and t.status = 'queued'
     group by t.queue_name order by t.queue_name
  loop
    perform switchyard._hide_messages(q.queue_name, q.ids,
      array_fill(switchyard.pause_hide_seconds(), array[cardinality(q.ids)]));
  end loop;
  perform switchyard._run_note(run, 'paused',
    jsonb_build_object('reason', left(reason, 4000), 'by', actor));
  return true;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_queue_plain_tasks.sql

-- Creates the tasks of plain ready steps (no condition, not a map) whose states were just moved
-- to started: one task each (task index 0), its queue an immutable snapshot of the step's, its
-- message sent with the step's start delay. The one implementation of successor start for plain
-- steps (docs/design/runs.md#ready-steps-conditions-and-skips): complete_tasks calls it for a
-- batch's runs together,
-- _start_ready_steps for one run. The steps are given in (run, step index) order as parallel
-- arrays; one pgmq.send_batch per queue and stretch of equal start delay, in that order, so
-- every queue numbers the messages as one send per step would. Returns the number of tasks.
-- Generic plans always (plan_cache_mode): its callers pass one run (start_flow) or a batch
-- (complete_tasks), so the plan cache, comparing the generic plan with the cheap custom plans of
-- one run, planned its two statements again on most calls, 0.9 and 0.2 ms each against 0.13 ms
-- of execution (BENCHMARKS.md, "Hot path, third round (issue 45): the completion"). Every
-- statement finds a batch's rows by key, so a cached plan is kept to index lookups in nested
-- loops as in complete_tasks (docs/design/claim.md#planner-settings), whoever calls it first.
create or replace function switchyard._queue_plain_tasks(runs uuid[], flows text[], steps text[])
returns int
language plpgsql
volatile
set search_path = ''
set plan_cache_mode = force_generic_plan
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  q record;
  queues text[];
  delays int[];
  max_attempts int[];
  base_delays int[];
  max_delays int[];
  timeouts int[];
  priorities int[];
  keyed boolean[];
  floors int[];
begin
  if cardinality(runs) = 0 then
    return 0;
  end if;
  -- Each step's queue snapshot, start delay and attempt options, read once, by position.
  select array_agg(st.queue_name order by u.ord), array_agg(st.start_delay order by u.ord),
         array_agg(coalesce(st.max_attempts, f.max_attempts) order by u.ord),
         array_agg(coalesce(st.base_delay, f.base_delay) order by u.ord),
         array_agg(coalesce(st.max_delay, f.max_delay) order by u.ord),
         array_agg(coalesce(st.timeout, f.timeout) order by u.ord),
         array_agg(r.priority order by u.ord),
         array_agg(st.concurrency_limit is not null order by u.ord),
         array_agg(r.attempt_floor order by u.ord)
    into queues, delays, max_attempts, base_delays, max_delays, timeouts, priorities, keyed,
         floors
    from unnest(runs, flows, steps) with ordinality as u(run_id, flow_slug, step_slug, ord)
    join switchyard.steps st on st.flow_slug = u.flow_slug and st.step_slug = u.step_slug
    join switchyard.flows f on f.flow_slug = u.flow_slug
    join switchyard.runs r on r.run_id = u.run_id;
  for q in
    select g.queue_name, g.start_delay, array_agg(g.ord::int order by g.ord) as ords,
           array_agg(switchyard._task_message(
                       g.run_id, g.flow_slug, g.step_slug, null, g.priority, g.start_delay,
                       case when g.keyed
                            then switchyard._concurrency_key(g.run_id, g.flow_slug, g.step_slug, 0)
                       end) order by g.ord) as bodies
      from (select u.queue_name, u.start_delay, u.run_id, u.flow_slug, u.step_slug, u.ord,
                   u.priority, u.keyed,
                   row_number() over (partition by u.queue_name order by u.ord)
                     - row_number() over (partition by u.queue_name, u.start_delay
                                          order by u.ord) as stretch
              from unnest(queues, delays, runs, flows, steps, priorities, keyed)
                     with ordinality as u(queue_name, start_delay, run_id, flow_slug, step_slug,
                                          priority, keyed, ord)) g
     group by g.queue_name, g.start_delay, g.stretch
     order by g.queue_name, min(g.ord)
  loop
    -- PGMQ numbers a batch's messages in the order given. The body (_task_message) is for
    -- humans and the read's order; claiming trusts only (queue_name, message_id).
    -- A rerun run's tasks count their attempts on from its attempt floor (rerun_run); 0 else.
    insert into switchyard.step_tasks (run_id, step_slug, flow_slug, queue_name, message_id,
                                       attempts_count, max_attempts, base_delay, max_delay,
                                       timeout)
    select runs[o.ord], steps[o.ord], flows[o.ord], q.queue_name, b.msg_id, floors[o.ord],
           floors[o.ord] + max_attempts[o.ord], base_delays[o.ord], max_delays[o.ord],
           timeouts[o.ord]
      from (select m.msg_id, row_number() over (order by m.msg_id) as i
              from pgmq.send_batch(q.queue_name, q.bodies, q.start_delay) as m(msg_id)) b
      join unnest(q.ords) with ordinality as o(ord, i) on o.i = b.i;
  end loop;
  return cardinality(runs);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_rerun_steps.sql

-- Makes `steps` of an ended run (rerun_run holds its tasks and its row) run again, in place
-- (docs/design/rerun.md): their messages still queued are archived and their tasks deleted
-- (with the tasks' failed attempts, checkpoints and progress windows), a wait step's kept signal
-- is dropped (it waits again), and each state is 'created' again with its dependencies inside
-- `steps` still to finish. The run counts `steps` as its remaining steps and its attempt floor
-- becomes the most attempts any of its tasks had used, so a task created from now on counts its
-- attempts on from there: a late answer of an attempt from before the rerun (a task that was
-- still running, a stalled worker) names an attempt no new task has, and is ignored.
create or replace function switchyard._rerun_steps(run uuid, steps text[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  q record;
  used int;
begin
  select coalesce(max(t.attempts_count), 0) into used
    from switchyard.step_tasks t where t.run_id = run;
  for q in
    select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
      from switchyard.step_tasks t
     where t.run_id = run and t.step_slug = any (steps) and t.status in ('queued', 'started')
     group by t.queue_name order by t.queue_name
  loop
    perform pgmq.archive(q.queue_name, q.ids);
  end loop;
  delete from switchyard.step_tasks t where t.run_id = run and t.step_slug = any (steps);
  delete from switchyard.run_signals s where s.run_id = run and s.step_slug = any (steps);
  update switchyard.step_states ss
     set status = 'created', output = null, started_at = null, completed_at = null,
         failed_at = null, skipped_at = null, skip_reason = null, remaining_tasks = 1,
         wait_deadline = null, wait_due = null,
         remaining_deps = (select count(*) from switchyard.deps d
                            where d.flow_slug = ss.flow_slug and d.step_slug = ss.step_slug
                              and d.dep_slug = any (steps))
   where ss.run_id = run and ss.step_slug = any (steps);
  update switchyard.runs r
     set remaining_steps = cardinality(steps), attempt_floor = greatest(r.attempt_floor, used)
   where r.run_id = run;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_run_event.sql

-- Runs were inserted ('started') or changed status ('retried' when a failed run starts again):
-- a statement trigger with transition tables (triggers.sql), one call and one insert of events
-- per statement whatever the number of rows (docs/design/client.md). Rows whose status did
-- not change (a run's counters) write nothing. A run's own transitions update its row, so the
-- run is locked before its event is numbered; the events follow the statement's order of rows.
-- A transaction's notifications are delivered at commit and identical ones folded, so each run
-- touched is notified once.
create or replace function switchyard._run_event()
returns trigger
language plpgsql
security definer
set search_path = ''
set enable_hashjoin = on
as $$
declare
  notified bigint;
  ended_flows text[];     -- the runs that ended here: version, outcome, duration (counters)
  ended_outcomes text[];
  ended_secs double precision[];
  retried_flows text[];
begin
  -- A statement that wrote no row: nothing to do, and one probe instead of the query below.
  perform from switchyard_new_runs limit 1;
  if not found then
    return null;
  end if;
  if tg_op = 'INSERT' then
    -- A run with an origin (docs/design/origins.md) says so in its 'started' event's data.
    with t as (select n.run_id, n.owner, n.flow_slug, n.status as event,
                      case when n.origin is not null
                           then jsonb_build_object('origin', n.origin) end as data,
                      row_number() over () as ord
                 from switchyard_new_runs n),
         written as (
           -- A flow with events: false writes no row; the notification still wakes the
           -- client's waits.
           insert into switchyard.run_events (run_id, owner, flow_slug, event, data)
           select t.run_id, t.owner, t.flow_slug, t.event, t.data
             from t left join switchyard.flows f on f.flow_slug = t.flow_slug
            where coalesce(f.events, true)
            order by t.ord)
    select count(pg_notify('switchyard_run_events', t.run_id::text)) into notified
      from t;
  else
    -- One pass over the transition tables writes the events, notifies and collects the
    -- counters (docs/design/observability.md#counters-histograms-and-levels): a run that
    -- ended (completed, failed, cancelled) is an observation of the histogram of run
    -- durations, its end the outcome; a failed run started again is a retry. Rows whose
    -- status did not change (a run's count-down) are none of these.
    with t as (select n.run_id, n.owner, n.flow_slug, n.status,
                      case when o.status = 'failed' and n.status = 'started' then 'retried'
                           else n.status end as event,
                      extract(epoch from coalesce(n.completed_at, n.failed_at, n.cancelled_at)
                                         - n.started_at)::double precision as secs,
                      n.ord
                 from (select n.*, row_number() over () as ord from switchyard_new_runs n) n
                 join switchyard_old_runs o on o.run_id = n.run_id
                where o.status is distinct from n.status),
         written as (
           insert into switchyard.run_events (run_id, owner, flow_slug, event)
           select t.run_id, t.owner, t.flow_slug, t.event
             from t left join switchyard.flows f on f.flow_slug = t.flow_slug
            where coalesce(f.events, true)
            order by t.ord)
    select count(pg_notify('switchyard_run_events', t.run_id::text)),
           array_agg(t.flow_slug) filter (where t.status <> 'started'),
           array_agg(t.status) filter (where t.status <> 'started'),
           array_agg(t.secs) filter (where t.status <> 'started'),
           array_agg(t.flow_slug) filter (where t.status = 'started')
      into notified, ended_flows, ended_outcomes, ended_secs, retried_flows
      from t;
    if ended_flows is not null then
      perform switchyard._count_metrics(array['run_duration'], null, ended_flows, null,
        ended_outcomes, ended_secs);
    end if;
    if retried_flows is not null then
      perform switchyard._count_metrics(array['runs_retried'], null, retried_flows, null);
    end if;
  end if;
  return null;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_run_note.sql

-- Records an operator's action on a run (docs/design/rerun.md): a 'rerun', 'forked',
-- 'moved', 'paused' or 'resumed' event with who did it and what in `data`, and the run's
-- notification, as _run_event writes the status events (a flow with events: false writes no row;
-- the notification still wakes waits). The caller holds the run's row lock, so the event's
-- number follows every event committed before it.
create or replace function switchyard._run_note(run uuid, event text, data jsonb)
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  insert into switchyard.run_events (run_id, owner, flow_slug, event, data)
  select r.run_id, r.owner, r.flow_slug, _run_note.event, _run_note.data
    from switchyard.runs r
    left join switchyard.flows f on f.flow_slug = r.flow_slug
   where r.run_id = run and coalesce(f.events, true);
  perform pg_notify('switchyard_run_events', run::text);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_run_outputs.sql

-- Runs' outputs, one row per run given: the outputs of its completed leaf steps (no step
-- depends on them), '{}' when there is none; a skipped leaf is absent. The one definition:
-- complete_tasks asks it for each run its count-down completes, _run_output for one run. A SQL
-- function without SET or SECURITY DEFINER, so PostgreSQL inlines it into the caller's query
-- (planned once per session with that query): complete_tasks evaluates it only for the runs
-- that complete, inside the count-down's update, with no function call of its own.
create or replace function switchyard._run_outputs(runs uuid[])
returns table (run_id uuid, output jsonb)
rows 10
language sql
stable
as $$
  select r.run_id,
         coalesce((select jsonb_object_agg(ss.step_slug, ss.output)
                     from switchyard.step_states ss
                    where ss.run_id = r.run_id and ss.status = 'completed'
                      and not exists (select 1 from switchyard.deps d
                                       where d.flow_slug = r.flow_slug
                                         and d.dep_slug = ss.step_slug)),
                  '{}'::jsonb)
    from switchyard.runs r
   where r.run_id = any (runs)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_skip_step.sql

-- Skips a step (docs/design/runs.md#ready-steps-conditions-and-skips): its state becomes 'skipped'
-- with the reason; with
-- `cascading`, every step that depends on it, transitively, is skipped too. The run's step
-- count goes down by the number skipped, and the dependents of skipped steps that still wait
-- count one dependency down (they run without the skipped output). Returns how many were
-- skipped. The caller holds the run (a row lock, or the transaction that created it).
create or replace function switchyard._skip_step(
  run uuid, flow text, step text, reason text, cascading boolean
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  skipped text[];
begin
  with recursive closure(step_slug) as (
    select step
    union
    select d.step_slug from switchyard.deps d join closure c on d.dep_slug = c.step_slug
     where cascading and d.flow_slug = flow
  ),
  marked as (
    update switchyard.step_states ss
       set status = 'skipped', skipped_at = switchyard.clock_now(), wait_due = null,
           skip_reason = case when ss.step_slug = step then reason
                              else format('skip-cascade: step %s was skipped', to_json(step)) end
      from closure c
     where ss.run_id = run and ss.step_slug = c.step_slug and ss.status in ('created', 'started')
    returning ss.step_slug
  )
  select coalesce(array_agg(m.step_slug), '{}') into skipped from marked m;
  update switchyard.step_states ss
     set remaining_deps = ss.remaining_deps - x.n
    from (select d.step_slug, count(*)::int as n from switchyard.deps d
           where d.flow_slug = flow and d.dep_slug = any (skipped)
           group by d.step_slug) x
   where ss.run_id = run and ss.step_slug = x.step_slug and ss.status = 'created';
  update switchyard.runs r
     set remaining_steps = r.remaining_steps - cardinality(skipped)
   where r.run_id = run;
  return cardinality(skipped);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_start_ready_steps.sql

-- Moves every created step of a run whose dependencies are done (completed or skipped) to
-- started, then per step, in index order:
--   - a condition (docs/design/runs.md#ready-steps-conditions-and-skips) is evaluated here, in SQL
-- only, over the step's
--     input (the run input for a root step, else _dependency_outputs): met when the input
--     contains cond_if and does not contain cond_if_not (jsonb @>). Unmet: 'skip' skips the
--     step, 'skip-cascade' also every step depending on it, 'fail' fails the run;
--   - a map step (docs/design/runs.md#map-steps) reads its array (the run input, or its one
--     dependency's output): not an array fails the run naming the step and the value's type;
--     more than max_map_elements() elements fails it with the count and the limit; an empty
--     array completes the step with [] and no task; else one task per element, task_index
--     0..n-1, every message sent in one pgmq.send_batch;
--   - a wait, sleep or flow step (docs/design/waits.md) gets no task: _begin_wait
--     delivers a signal kept for it, else the step waits (until signal_run or expire_waits
--     ends it); a flow step starts its child run (_begin_child);
--   - otherwise (a plain step) its task is created by _queue_plain_tasks, the one path of plain
--     successor start that complete_tasks takes too: plain steps are queued together, in index
--     order, before each condition or map step and after the last step.
-- A skip or an empty map can make dependents ready, so it repeats until nothing moves; a run
-- whose steps are then all completed or skipped completes here. Returns the number of tasks
-- created.
create or replace function switchyard._start_ready_steps(target_run uuid)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  ready record;
  started int := 0;
  step_input jsonb;
  elements jsonb;
  element_count int;
  source_slug text;
  moved_any boolean;
  skipped_any boolean := false;
  plain_flows text[] := '{}';   -- plain ready steps not queued yet (parallel arrays)
  plain_steps text[] := '{}';
  floor int;
begin
  loop
    moved_any := false;
    for ready in
      with moved as (
        update switchyard.step_states ss
           set status = 'started', started_at = switchyard.clock_now()
         where ss.run_id = target_run and ss.status = 'created' and ss.remaining_deps = 0
        returning ss.run_id, ss.flow_slug, ss.step_slug
      )
      select m.run_id, m.flow_slug, m.step_slug, st.queue_name, st.start_delay, st.deps_count,
             st.step_type, st.cond_if, st.cond_if_not, st.when_unmet,
             coalesce(st.max_attempts, f.max_attempts) as max_attempts,
             coalesce(st.base_delay, f.base_delay) as base_delay,
             coalesce(st.max_delay, f.max_delay) as max_delay,
             coalesce(st.timeout, f.timeout) as timeout, st.concurrency_limit,
             (select r.priority from switchyard.runs r where r.run_id = m.run_id) as priority
        from moved m
        join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug
        join switchyard.flows f on f.flow_slug = m.flow_slug
       order by st.step_index
    loop
      if ready.step_type = 'single' and ready.cond_if is null and ready.cond_if_not is null then
        plain_flows := plain_flows || ready.flow_slug;
        plain_steps := plain_steps || ready.step_slug;
        continue;
      end if;
      started := started + switchyard._queue_plain_tasks(
        array_fill(target_run, array[cardinality(plain_steps)]), plain_flows, plain_steps);
      plain_flows := '{}';
      plain_steps := '{}';
      if ready.cond_if is not null or ready.cond_if_not is not null then
        if ready.deps_count = 0 then
          select r.input into step_input from switchyard.runs r where r.run_id = target_run;
        else
          step_input := switchyard._dependency_outputs(target_run, ready.flow_slug, ready.step_slug);
        end if;
        if not ((ready.cond_if is null or step_input @> ready.cond_if)
                and (ready.cond_if_not is null or not step_input @> ready.cond_if_not)) then
          if ready.when_unmet = 'fail' then
            perform switchyard._fail_run_step(target_run, ready.step_slug, format(
              'step %s condition is not met (if %s, ifNot %s) and whenUnmet is fail',
              to_json(ready.step_slug)::text, coalesce(ready.cond_if::text, 'none'),
              coalesce(ready.cond_if_not::text, 'none')));
            return started;
          end if;
          perform switchyard._skip_step(target_run, ready.flow_slug, ready.step_slug,
            format('condition not met (if %s, ifNot %s)', coalesce(ready.cond_if::text, 'none'),
                   coalesce(ready.cond_if_not::text, 'none')),
            ready.when_unmet = 'skip-cascade');
          moved_any := true;
          skipped_any := true;
          continue;
        end if;
      end if;
      if ready.step_type in ('wait', 'sleep', 'flow') then
        if switchyard._begin_wait(target_run, ready.flow_slug, ready.step_slug) then
          -- Done at once, or failed with the run (a child that could not start, a sleep's
          -- time that is not one): a failed run starts nothing more.
          if not exists (select 1 from switchyard.runs r
                          where r.run_id = target_run and r.status = 'started') then
            return started;
          end if;
          moved_any := true;
          skipped_any := true;
        end if;
        continue;
      end if;
      if ready.step_type = 'map' then
        if ready.deps_count = 0 then
          select r.input into elements from switchyard.runs r where r.run_id = target_run;
          source_slug := null;
        else
          select d.dep_slug, ds.output into source_slug, elements
            from switchyard.deps d
            join switchyard.step_states ds on ds.run_id = target_run and ds.step_slug = d.dep_slug
           where d.flow_slug = ready.flow_slug and d.step_slug = ready.step_slug;
        end if;
        if elements is null or jsonb_typeof(elements) <> 'array' then
          perform switchyard._fail_run_step(target_run, ready.step_slug, format(
            'map step %s needs an array from %s, got %s', to_json(ready.step_slug)::text,
            case when source_slug is null then 'the flow input'
                 else format('step %s', to_json(source_slug)::text) end,
            coalesce(jsonb_typeof(elements), 'no value (the step was skipped)')));
          return started;
        end if;
        element_count := jsonb_array_length(elements);
        if element_count > switchyard.max_map_elements() then
          perform switchyard._fail_run_step(target_run, ready.step_slug, format(
            'map step %s refused %s elements from %s: at most %s elements per map',
            to_json(ready.step_slug)::text, element_count,
            case when source_slug is null then 'the flow input'
                 else format('step %s', to_json(source_slug)::text) end,
            switchyard.max_map_elements()));
          return started;
        end if;
        if element_count = 0 then
          perform switchyard._complete_without_tasks(target_run, ready.flow_slug, ready.step_slug, '[]');
          moved_any := true;
          skipped_any := true;
          continue;
        end if;
        -- One task per element; PGMQ numbers a batch's messages in the order given. A rerun
        -- run's tasks count their attempts on from its attempt floor (rerun_run).
        select r.attempt_floor into floor from switchyard.runs r where r.run_id = target_run;
        insert into switchyard.step_tasks (run_id, step_slug, task_index, flow_slug, queue_name,
                                           message_id, attempts_count, max_attempts, base_delay,
                                           max_delay, timeout)
        select ready.run_id, ready.step_slug, (b.ord - 1)::int, ready.flow_slug, ready.queue_name,
               b.msg_id, floor, floor + ready.max_attempts, ready.base_delay, ready.max_delay,
               ready.timeout
          from (select m.msg_id, row_number() over (order by m.msg_id) as ord
                  from pgmq.send_batch(
                         ready.queue_name,
                         array(select switchyard._task_message(
                                        ready.run_id, ready.flow_slug, ready.step_slug, g.i,
                                        ready.priority, ready.start_delay,
                                        case when ready.concurrency_limit is not null
                                             then switchyard._concurrency_key(
                                                    ready.run_id, ready.flow_slug,
                                                    ready.step_slug, g.i)
                                        end)
                                 from generate_series(0, element_count - 1) g(i) order by g.i),
                         ready.start_delay) as m(msg_id)) b;
        update switchyard.step_states ss set remaining_tasks = element_count
         where ss.run_id = target_run and ss.step_slug = ready.step_slug;
        started := started + element_count;
        continue;
      end if;
      -- A plain step whose condition is met.
      plain_flows := plain_flows || ready.flow_slug;
      plain_steps := plain_steps || ready.step_slug;
    end loop;
    started := started + switchyard._queue_plain_tasks(
      array_fill(target_run, array[cardinality(plain_steps)]), plain_flows, plain_steps);
    plain_flows := '{}';
    plain_steps := '{}';
    exit when not moved_any;
  end loop;
  if skipped_any then  -- a skip or an empty map may have finished the run
    perform switchyard._complete_run_if_done(target_run);
  end if;
  return started;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_task_message.sql

-- The body of a task's message. Claiming trusts only (queue_name, message_id); the body is for
-- humans and for the read's order (docs/design/flow-control.md#priority-and-keys-in-turn):
-- `task_index` when given (a map
-- task's element, a retried or re-sent task past index 0); `priority` and `ranked_at` (when the
-- message may be read, in epoch seconds, less `priority` times priority_ageing_seconds) for a run
-- of priority other than 0; `concurrency_key` for a step with keyed concurrency. A run of
-- priority 0 on a step without keyed concurrency gets the body of every earlier release.
create or replace function switchyard._task_message(
  run_id uuid, flow_slug text, step_slug text, task_index int, priority int, delay_seconds int,
  concurrency_key text
)
returns jsonb
language sql
stable
-- No SET clause (every name is qualified): PostgreSQL then inlines it into the successor start's
-- query, which calls it once per task, instead of calling a function per task.
as $$
  select jsonb_build_object('run_id', run_id, 'flow_slug', flow_slug, 'step_slug', step_slug)
         || case when task_index is not null then jsonb_build_object('task_index', task_index)
                 else '{}'::jsonb end
         || case when coalesce(priority, 0) <> 0 then jsonb_build_object(
                   'priority', priority,
                   'ranked_at', round((extract(epoch from switchyard.queue_now())
                                       + coalesce(delay_seconds, 0)
                                       - priority * switchyard.limit_value('priority_ageing_seconds')
                                      )::numeric, 6))
                 else '{}'::jsonb end
         || case when concurrency_key is not null
                 then jsonb_build_object('concurrency_key', concurrency_key)
                 else '{}'::jsonb end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_version_problems.sql

-- What keeps a run's steps from going onto another concrete version
-- (docs/design/rerun.md), one readable line each, empty when the proof holds: every step whose
-- state is kept
-- (`kept`: its output copied by a fork, or completed, skipped or started in a moved run) exists
-- in `target` with the same slug, the same kind and the same dependencies, and every step named
-- in `must_run` exists there. Steps of `target` not in `source` simply run. Read from the
-- compiled shapes only, so the proof is the SQL core's, never a caller's.
create or replace function switchyard._version_problems(
  source text, target text, kept text[], must_run text[]
)
returns text[]
language sql
stable
set search_path = ''
as $$
  select coalesce(array_agg(p.problem order by p.ord, p.problem), '{}') from (
    select 1 as ord, format('step %s is kept but %s has no step %s', to_json(k.slug)::text,
                            to_json(target)::text, to_json(k.slug)::text) as problem
      from unnest(kept) k(slug)
     where not exists (select 1 from switchyard.steps t
                        where t.flow_slug = target and t.step_slug = k.slug)
    union all
    select 2, format('step %s is a %s step in %s but a %s step in %s', to_json(s.step_slug)::text,
                     s.step_type, to_json(source)::text, t.step_type, to_json(target)::text)
      from unnest(kept) k(slug)
      join switchyard.steps s on s.flow_slug = source and s.step_slug = k.slug
      join switchyard.steps t on t.flow_slug = target and t.step_slug = k.slug
     where s.step_type <> t.step_type
    union all
    select 3, format('step %s depends on [%s] in %s but on [%s] in %s', to_json(k.slug)::text,
                     array_to_string(sd.deps, ', '), to_json(source)::text,
                     array_to_string(td.deps, ', '), to_json(target)::text)
      from unnest(kept) k(slug)
      join switchyard.steps t on t.flow_slug = target and t.step_slug = k.slug
      cross join lateral (select coalesce(array_agg(d.dep_slug order by d.dep_slug), '{}') as deps
                            from switchyard.deps d
                           where d.flow_slug = source and d.step_slug = k.slug) sd
      cross join lateral (select coalesce(array_agg(d.dep_slug order by d.dep_slug), '{}') as deps
                            from switchyard.deps d
                           where d.flow_slug = target and d.step_slug = k.slug) td
     where sd.deps <> td.deps
    union all
    select 4, format('step %s must run but %s has no step %s', to_json(m.slug)::text,
                     to_json(target)::text, to_json(m.slug)::text)
      from unnest(must_run) m(slug)
     where not exists (select 1 from switchyard.steps t
                        where t.flow_slug = target and t.step_slug = m.slug)
  ) p
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/bulk_run_action.sql

-- One action over the runs a filter matches (docs/design/rerun.md): 'rerun' (rerun_run from
-- `from_step` with `input_patch`), 'fork' (fork_run from `from_step` onto `to_flow`, with
-- `input_patch` as the fork's whole input when given), 'move'
-- (move_run onto `to_flow`), 'pause' or 'resume'. The filter: `flow_or_alias` (a run of that
-- concrete flow, started as that name, or of any version of that alias), `status`, started in
-- [`started_from`, `started_before`), and `error_contains` (case-insensitive, in the run's error).
-- Bounded and resumable: at most `max_runs` runs (1 to 10000), in run id order after `after_run`,
-- so the last run id answered is where the next call goes on. Each run is acted on alone (a
-- subtransaction): a refusal is that run's answer ('refused' with the message), never the
-- batch's. With `dry_run` (the default) every action is done and rolled back, so the answers
-- ('would rerun', …) count exactly what would change and nothing does. Idempotent when repeated:
-- a run already acted on no longer matches, or its action answers 'unchanged' or is refused.
-- Two calls at once act on each run once: a run another bulk call holds is answered 'busy'
-- (a transaction-scoped advisory lock, tried without waiting); a repeat picks it up if that call
-- rolled back. Returns one row per matched run: its id, the outcome and a detail.
create or replace function switchyard.bulk_run_action(
  action text, flow_or_alias text default null, status text default null,
  started_from timestamptz default null, started_before timestamptz default null,
  error_contains text default null, from_step text default null, to_flow text default null,
  input_patch jsonb default null, dry_run boolean default true, max_runs int default 100,
  after_run uuid default null, actor text default null
)
returns table (run_id uuid, outcome text, detail text)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  candidate uuid;
  done text;
  said text;
  who text := coalesce(actor, session_user::text);
begin
  if action is null or action not in ('rerun', 'fork', 'move', 'pause', 'resume') then
    perform switchyard._refuse('22023', 'action_unknown', 'action', action, format(
      'bulk_run_action: action %s is invalid: use rerun, fork, move, pause or resume',
      coalesce(switchyard._clip(action), 'null')),
      context => jsonb_build_object('choices', jsonb_build_array('rerun', 'fork', 'move',
                                                                'pause', 'resume')));
  end if;
  if max_runs is null or max_runs not between 1 and 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'max_runs', max_runs::text, format(
      'bulk_run_action: max_runs %s is invalid: use 1 to 10000 runs per call, and after_run to '
      'go on', coalesce(max_runs::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  if status is not null and status not in ('started', 'completed', 'failed', 'cancelled') then
    perform switchyard._refuse('22023', 'status_unknown', 'status', status, format(
      'bulk_run_action: status %s is invalid: use started, completed, failed or cancelled',
      switchyard._clip(status)));
  end if;
  if action in ('rerun', 'fork') and from_step is null then
    perform switchyard._refuse('22023', 'argument_missing', 'from_step', null, format(
      'bulk_run_action: %s needs from_step, the step the runs run again from', action));
  end if;
  if action = 'move' and to_flow is null then
    perform switchyard._refuse('22023', 'argument_missing', 'to_flow', null,
      'bulk_run_action: move needs to_flow, the version the runs go onto');
  end if;
  for candidate in
    select r.run_id from switchyard.runs r
     where (after_run is null or r.run_id > after_run)
       and (flow_or_alias is null or r.flow_slug = flow_or_alias or r.started_as = flow_or_alias
            or r.flow_slug in (select m.flow_slug from switchyard.alias_members m
                                where m.alias = flow_or_alias))
       and (bulk_run_action.status is null or r.status = bulk_run_action.status)
       and (started_from is null or r.started_at >= started_from)
       and (started_before is null or r.started_at < started_before)
       and (error_contains is null
            or strpos(lower(coalesce(r.error, '')), lower(error_contains)) > 0)
     order by r.run_id
     limit max_runs
  loop
    run_id := candidate;
    begin
      if not pg_try_advisory_xact_lock(
               hashtextextended('switchyard.bulk_run_action ' || candidate::text, 0)) then
        outcome := 'busy';
        detail := 'another bulk call holds this run: repeat the call to act on it';
      else
        case action
          when 'rerun' then
            done := 'rerun';
            said := format('%s step(s) run again',
              switchyard.rerun_run(candidate, from_step, input_patch, who));
          when 'fork' then
            done := 'forked';
            said := switchyard.fork_run(candidate, from_step, input_patch, to_flow, who)::text;
          when 'move' then
            done := case when switchyard.move_run(candidate, to_flow, who) then 'moved'
                         else 'unchanged' end;
            said := switchyard.resolve_flow(to_flow);
          when 'pause' then
            done := case when switchyard.pause_run(candidate, 'bulk pause', who) then 'paused'
                         else 'unchanged' end;
            said := null;
          else
            done := 'resumed';
            said := format('%s task(s) queued again', switchyard.resume_run(candidate, who));
        end case;
        outcome := done;
        detail := said;
        if dry_run then
          -- Caught below: it rolls this run's action back.
          raise exception using errcode = 'SY091', message = 'dry run: rolled back',
            detail = jsonb_build_object('rule', 'dry_run')::text;
        end if;
      end if;
    exception
      when sqlstate 'SY091' then
        outcome := 'would ' || done;
        detail := said;
      when sqlstate '22023' or sqlstate '55000' or sqlstate '23505' then
        outcome := 'refused';
        detail := sqlerrm;
    end;
    return next;
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/cancel_overdue_runs.sql

-- Cancels the started runs whose deadline passed (docs/design/client.md, "Deadlines"), at
-- most max_runs, soonest deadline first, through cancel_run with the reason 'deadline' (so the
-- run's error reads "cancelled: deadline", its queued tasks are archived and its running
-- handlers hear of it at their next heartbeat). Runs from every stall sweep, every keep-alive
-- tick and by hand, so deadlines hold with no worker alive. A run another transaction holds is
-- left for the next call. Returns the number cancelled.
create or replace function switchyard.cancel_overdue_runs(
  now_at timestamptz default switchyard.clock_now(), max_runs int default 1000
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  overdue uuid;
  n int := 0;
  err_state text;
  err_message text;
begin
  for overdue in
    select r.run_id from switchyard.runs r
     where r.status = 'started' and r.deadline_at is not null and r.deadline_at <= now_at
     order by r.deadline_at
     limit greatest(coalesce(max_runs, 1000), 1)
  loop
    -- Its family's rows in cancel_run's order (child runs first), none waited for: a run or
    -- child another transaction holds is left for the next call.
    -- An error no rule foresaw fails that run alone (_fail_run_unforeseen), so one run can
    -- never keep every other deadline from holding.
    begin
      perform switchyard._lock_run_family(overdue, true);
      continue when not exists (select 1 from switchyard.runs r
                                 where r.run_id = overdue and r.status = 'started');
      perform switchyard.cancel_run(overdue, 'deadline');
      n := n + 1;
    exception when others then
      if sqlstate = '55P03' or sqlstate like '40%' or sqlstate like '57%' then
        continue;
      end if;
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        perform switchyard._fail_run_unforeseen(overdue, 'its deadline passed and it could not be cancelled',
                                                err_state, err_message);
      exception when others then
        raise warning 'switchyard.cancel_overdue_runs: run %: % (%); left for the next tick',
          overdue, sqlerrm, sqlstate;
      end;
    end;
  end loop;
  return n;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/cancel_run.sql

-- Cancels a started run (docs/design/client.md); every transition is a run event. In one
-- transaction, holding the run's row lock (which complete_tasks and fail_task take too, so none
-- of them interleaves):
--   - the messages of its queued tasks are archived (nothing of the run stays visible) and
--     those tasks become 'cancelled';
--   - its created and started steps become 'cancelled';
--   - the run becomes 'cancelled' with the reason in `error`.
-- Tasks a worker is running finish: their late answer is refused, by complete_tasks (ok
-- false, no output kept) and by fail_task ('cancelled', no failed attempt counted), which
-- archive the message and cancel the task; nothing changes a step or starts a successor. A cancelled run
-- never starts another step. Returns true when it cancelled the run, false when it already was
-- cancelled (the first reason is kept). A completed or failed run is refused (55000).
create or replace function switchyard.cancel_run(run_id uuid, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  child uuid;
begin
  if reason is null or btrim(reason) = '' then
    perform switchyard._refuse('22023', 'reason_missing', 'reason', reason, format(
      'cancel_run(%s): reason %s is invalid: say why the run is cancelled',
      coalesce(cancel_run.run_id::text, 'null'), coalesce(to_json(reason)::text, 'null')),
      context => jsonb_build_object('run_id', cancel_run.run_id));
  end if;
  -- The run's family (a child flow's runs, its parent) bottom-up, before the run itself goes on
  -- to lock its children: a child ending meanwhile locks child then parent too.
  perform switchyard._lock_run_family(cancel_run.run_id);
  select * into run from switchyard.runs r where r.run_id = cancel_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', cancel_run.run_id::text, format(
      'cancel_run: run %s does not exist', coalesce(cancel_run.run_id::text, 'null')));
  end if;
  if run.status = 'cancelled' then
    return false;
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'cancel_run: run %s is %s; only a started run can be cancelled',
      run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  -- The queued tasks before their messages, in (queue, message id) order, as start_tasks
  -- locks them (a task, then its message): a claim in flight cannot deadlock with this.
  perform 1 from switchyard.step_tasks t
   where t.run_id = run.run_id and t.status = 'queued'
   order by t.queue_name, t.message_id
     for update;
  -- Their messages, one archive per queue (as a final failure archives them).
  perform switchyard._archive_queued(run.run_id);
  -- Cancelled, not queued: nothing that looks for queued work (a sweep that re-sends a
  -- queued task's missing message, drain counts) finds them.
  update switchyard.step_tasks t
     set status = 'cancelled', worker_id = null
   where t.run_id = run.run_id and t.status = 'queued';
  update switchyard.step_states ss
     set status = 'cancelled', wait_due = null
   where ss.run_id = run.run_id and ss.status in ('created', 'started');
  update switchyard.runs r
     set status = 'cancelled', cancelled_at = switchyard.clock_now(),
         error = format('cancelled: %s', left(reason, 4000))
   where r.run_id = run.run_id;
  -- Its child runs (flow steps, docs/design/waits.md) that are still started, and theirs.
  for child in
    select c.run_id from switchyard.child_runs c
      join switchyard.runs r on r.run_id = c.run_id and r.status = 'started'
     where c.parent_run_id = run.run_id
     order by c.run_id
  loop
    perform switchyard.cancel_run(child, format('its parent run %s was cancelled', run.run_id));
  end loop;
  return true;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/close_batches.sql

-- The tick's part of batching (docs/design/batching.md): closes every open batch whose timeout
-- has passed by `now_at` (close_at <= now_at), oldest first, at most `max_batches`, each in a
-- subtransaction of its own; returns how many runs it started. A batch a writer holds (an event
-- joining it, in a transaction not yet committed) is skipped, never waited for: the next tick
-- closes it, with that event if it committed. A close that fails (the alias was deleted) keeps
-- the batch and its events, records the error (list_batches shows it) and is tried again next
-- tick. run_schedules calls it, so the keep-alive's and the scheduler's pg_cron jobs, `schedule
-- tick` and a test engine's rounds all close batches.
create or replace function switchyard.close_batches(
  now_at timestamptz default switchyard.clock_now(), max_batches int default 1000
)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  b record;
  closed int := 0;
begin
  if now_at is null or not isfinite(now_at) then
    perform switchyard._refuse('22023', 'now_at_range', 'now_at', now_at::text,
      'close_batches: now_at must be a finite time');
  end if;
  if max_batches is null or max_batches not between 1 and 100000 then
    perform switchyard._refuse('22023', 'integer_range', 'max_batches', max_batches::text, format(
      'close_batches: max_batches %s is invalid: use an integer from 1 to 100000',
      coalesce(max_batches::text, 'null')), context => jsonb_build_object('min', 1, 'max', 100000));
  end if;
  for b in select x.batch_id, x.started_as, x.batch_key from switchyard.batches x
            where x.close_at <= now_at
            order by x.close_at, x.batch_id
            limit max_batches
              for update skip locked loop
    begin
      perform switchyard._close_batch(b.batch_id, 'timeout');
      closed := closed + 1;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        raise;
      end if;
      update switchyard.batches x set last_error = left(format('%s (SQLSTATE %s)', sqlerrm,
                                                               sqlstate), 1000)
       where x.batch_id = b.batch_id;
      raise warning 'switchyard.close_batches: batch % of %: % (SQLSTATE %); tried again next tick',
        to_json(b.batch_key)::text, to_json(b.started_as)::text, sqlerrm, sqlstate;
    end;
  end loop;
  return closed;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/fork_run.sql

-- Forks a run from one of its steps (docs/design/rerun.md): a new run, `forked_from` and
-- `from_step` naming its lineage, that keeps the output of every step of the original not
-- depending on `from_step` (transitively) that completed or was skipped there, and runs the rest.
-- `input` (default: the original's) is the new run's input; `to_flow` (default: the original's
-- flow) is a flow or an alias naming another concrete version of the same alias, accepted only
-- when _version_problems proves it: every kept step exists there with the same slug, kind and
-- dependencies, and `from_step` exists there. The fork has the original's owner and priority,
-- its started_as, and the deadline of the new flow's runTimeout; it takes no start key. The
-- original is held (FOR SHARE) while its outputs are copied, so a concurrent cancel or rerun of
-- it waits for the fork, or the fork for them. Kept steps are inserted completed (or skipped)
-- and write those events; a 'forked' event records who (`actor`, default the session's role),
-- the original, the step and the kept steps. Returns the new run's id. Refused: an unknown run
-- (22023 run_unknown), a step the original's flow does not have (22023 step_unknown), a target
-- of another alias (22023 flow_other_alias), an unproven version (22023 version_incompatible,
-- +problems: each incompatibility).
create or replace function switchyard.fork_run(
  run_id uuid, from_step text, input jsonb default null, to_flow text default null,
  actor text default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  src switchyard.runs;
  target text;
  kept text[];
  problems text[];
  new_run uuid := gen_random_uuid();
begin
  select * into src from switchyard.runs r where r.run_id = fork_run.run_id for share;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', fork_run.run_id::text, format(
      'fork_run: run %s does not exist', coalesce(fork_run.run_id::text, 'null')));
  end if;
  if not exists (select 1 from switchyard.steps st
                  where st.flow_slug = src.flow_slug and st.step_slug = from_step) then
    perform switchyard._refuse('22023', 'step_unknown', 'from_step', from_step, format(
      'fork_run: flow %s of run %s has no step %s; its steps: %s', to_json(src.flow_slug)::text,
      src.run_id, switchyard._clip(from_step),
      (select string_agg(st.step_slug, ', ' order by st.step_index) from switchyard.steps st
        where st.flow_slug = src.flow_slug)),
      context => jsonb_build_object('flow_slug', src.flow_slug, 'steps',
        (select jsonb_agg(st.step_slug order by st.step_index) from switchyard.steps st
          where st.flow_slug = src.flow_slug)));
  end if;
  target := case when to_flow is null then src.flow_slug else switchyard.resolve_flow(to_flow) end;
  if target <> src.flow_slug
     and switchyard._flow_alias(target) is distinct from switchyard._flow_alias(src.flow_slug) then
    perform switchyard._refuse('22023', 'flow_other_alias', 'to_flow', to_flow, format(
      'fork_run: %s is not a version of the alias of run %s (flow %s, alias %s): fork onto '
      'another concrete version of the same alias only', switchyard._clip(to_flow), src.run_id,
      to_json(src.flow_slug)::text, coalesce(switchyard._flow_alias(src.flow_slug), 'none')),
      context => jsonb_build_object('flow_slug', src.flow_slug, 'target', target));
  end if;
  select coalesce(array_agg(ss.step_slug order by ss.step_slug), '{}') into kept
    from switchyard.step_states ss
   where ss.run_id = src.run_id and ss.status in ('completed', 'skipped')
     and ss.step_slug <> all (switchyard._downstream_steps(src.flow_slug, array[from_step]));
  problems := switchyard._version_problems(src.flow_slug, target, kept, array[from_step]);
  if cardinality(problems) > 0 then
    perform switchyard._refuse('22023', 'version_incompatible', 'to_flow', to_flow, format(
      'fork_run: run %s cannot go onto %s from step %s: %s', src.run_id, to_json(target)::text,
      to_json(from_step)::text, array_to_string(problems, '; ')),
      context => jsonb_build_object('flow_slug', src.flow_slug, 'target', target,
                                    'problems', to_jsonb(problems)));
  end if;
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner,
                               deadline_at, priority, forked_from, from_step)
  select new_run, target, src.started_as, coalesce(fork_run.input, src.input),
         (select count(*) from switchyard.steps st
           where st.flow_slug = target and st.step_slug <> all (kept)),
         src.owner,
         switchyard.clock_now() + f.run_timeout * interval '1 second',
         src.priority, src.run_id, from_step
    from switchyard.flows f where f.flow_slug = target;
  perform switchyard._run_note(new_run, 'forked', jsonb_build_object(
    'by', coalesce(actor, session_user::text), 'forked_from', src.run_id, 'from_step', from_step,
    'kept', to_jsonb(kept), 'from_flow', src.flow_slug));
  insert into switchyard.step_states (run_id, flow_slug, step_slug, status, remaining_deps, output,
                                      started_at, completed_at, skipped_at, skip_reason)
  select new_run, target, st.step_slug, coalesce(o.status, 'created'),
         case when o.step_slug is not null then 0
              else (select count(*) from switchyard.deps d
                     where d.flow_slug = target and d.step_slug = st.step_slug
                       and d.dep_slug <> all (kept)) end,
         o.output, o.started_at, o.completed_at, o.skipped_at, o.skip_reason
    from switchyard.steps st
    left join switchyard.step_states o
      on o.run_id = src.run_id and o.step_slug = st.step_slug and o.step_slug = any (kept)
   where st.flow_slug = target
   order by st.step_index;
  perform switchyard._start_ready_steps(new_run);
  perform switchyard._complete_run_if_done(new_run);
  return new_run;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/list_batches.sql

-- The open batches (docs/design/batching.md), for the dashboard, `doctor` and operators: per
-- batch the name its events started, its key, the run it becomes, its events and bytes so far,
-- its maxSize, when it opened and when the tick closes it, and the last error of a close that
-- failed. Oldest first, at most `max_rows`.
create or replace function switchyard.list_batches(max_rows int default 100)
returns table (
  started_as text, batch_key text, run_id uuid, size int, max_size int, bytes bigint,
  opened_at timestamptz, close_at timestamptz, last_error text
)
language sql
stable
security definer
set search_path = ''
as $$
  select b.started_as, b.batch_key, b.run_id, b.size, b.max_size, b.bytes, b.opened_at,
         b.close_at, b.last_error
    from switchyard.batches b
   order by b.opened_at, b.batch_id
   limit greatest(coalesce(max_rows, 100), 0)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/move_run.sql

-- Moves a started run onto another concrete version of its alias (docs/design/rerun.md):
-- the way off a version with a bug without cancelling the work, and a drain that ends sooner.
-- Accepted only when _version_problems proves it: every step of the run that completed, was
-- skipped or started exists in `to_flow` with the same slug, kind and dependencies; what has not
-- started runs as `to_flow` has it (its steps the run lacks are added, the run's steps it lacks
-- are dropped, dependencies counted by its shape). Running tasks finish first, on the workers of
-- the version that started them: their rows keep naming that version (drain_status counts them
-- there until they end), their completion counts on the run's step states, which name `to_flow`,
-- so their successors start on `to_flow` (the proof covers started steps: same kind, same
-- dependencies); one queued again (a retry, a hand-back, a stall) follows the run then
-- (_follow_run_flow). In one transaction, holding the run's family and then its queued tasks
-- (cancel_run's order; a claim and a completion wait for the run; a running task's row is not
-- taken, so a completion holding it waits for the move or the move commits after it):
--   - the step states and the queued and ended tasks name `to_flow`; a queued task whose step
--     has another queue there is sent again on that queue (its old message archived), so only
--     workers of the new version claim it;
--   - the run names `to_flow` (drain, coverage and the fence count it there at once) and counts
--     its remaining steps by the new shape; ready steps start;
--   - a 'moved' event records who (`actor`, default the session's role), from and to, and how
--     many tasks were still running on the old version.
-- Returns true when it moved the run, false when the run is on `to_flow` already. Refused: an
-- unknown run (22023 run_unknown), a run not started (55000 run_not_started), a target of another
-- alias (22023 flow_other_alias), an unproven version (22023 version_incompatible, +problems).
create or replace function switchyard.move_run(
  run_id uuid, to_flow text, actor text default null
)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  target text;
  kept text[];
  problems text[];
  running int;
  task record;
begin
  perform switchyard._lock_run_family(move_run.run_id);
  select * into run from switchyard.runs r where r.run_id = move_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', move_run.run_id::text, format(
      'move_run: run %s does not exist', coalesce(move_run.run_id::text, 'null')));
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'move_run: run %s is %s; only a started run can be moved (rerun or fork an ended one)',
      run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  target := switchyard.resolve_flow(to_flow);
  if target = run.flow_slug then
    return false;
  end if;
  if switchyard._flow_alias(target) is distinct from switchyard._flow_alias(run.flow_slug) then
    perform switchyard._refuse('22023', 'flow_other_alias', 'to_flow', to_flow, format(
      'move_run: %s is not a version of the alias of run %s (flow %s, alias %s): move onto '
      'another concrete version of the same alias only', switchyard._clip(to_flow), run.run_id,
      to_json(run.flow_slug)::text, coalesce(switchyard._flow_alias(run.flow_slug), 'none')),
      context => jsonb_build_object('flow_slug', run.flow_slug, 'target', target));
  end if;
  select count(*) into running from switchyard.step_tasks t
   where t.run_id = run.run_id and t.status = 'started';
  select coalesce(array_agg(ss.step_slug order by ss.step_slug), '{}') into kept
    from switchyard.step_states ss
   where ss.run_id = run.run_id and ss.status <> 'created';
  problems := switchyard._version_problems(run.flow_slug, target, kept, '{}');
  if cardinality(problems) > 0 then
    perform switchyard._refuse('22023', 'version_incompatible', 'to_flow', to_flow, format(
      'move_run: run %s cannot go onto %s: %s', run.run_id, to_json(target)::text,
      array_to_string(problems, '; ')),
      context => jsonb_build_object('flow_slug', run.flow_slug, 'target', target,
                                    'problems', to_jsonb(problems)));
  end if;
  perform switchyard._run_note(run.run_id, 'moved', jsonb_build_object(
    'by', coalesce(actor, session_user::text), 'from_flow', run.flow_slug, 'to_flow', target,
    'running', running));
  -- Its queued tasks, in (queue, message id) order as start_tasks locks them.
  perform 1 from switchyard.step_tasks t where t.run_id = run.run_id and t.status = 'queued'
   order by t.queue_name, t.message_id for update;
  -- The run's steps the new version lacks have not started (the proof): dropped.
  delete from switchyard.step_states ss
   where ss.run_id = run.run_id
     and not exists (select 1 from switchyard.steps st
                      where st.flow_slug = target and st.step_slug = ss.step_slug);
  update switchyard.step_states ss set flow_slug = target where ss.run_id = run.run_id;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select run.run_id, target, st.step_slug, 0
    from switchyard.steps st
   where st.flow_slug = target
     and not exists (select 1 from switchyard.step_states ss
                      where ss.run_id = run.run_id and ss.step_slug = st.step_slug)
   order by st.step_index;
  update switchyard.step_states ss
     set remaining_deps = (select count(*) from switchyard.deps d
                             join switchyard.step_states ds
                               on ds.run_id = ss.run_id and ds.step_slug = d.dep_slug
                            where d.flow_slug = target and d.step_slug = ss.step_slug
                              and ds.status not in ('completed', 'skipped'))
   where ss.run_id = run.run_id and ss.status = 'created';
  update switchyard.step_tasks t set flow_slug = target
   where t.run_id = run.run_id and t.status not in ('started', 'queued');
  update switchyard.runs r
     set flow_slug = target,
         remaining_steps = (select count(*) from switchyard.step_states ss
                             where ss.run_id = r.run_id and ss.status not in ('completed', 'skipped'))
   where r.run_id = run.run_id;
  for task in
    select t.step_slug, t.task_index from switchyard.step_tasks t
     where t.run_id = run.run_id and t.status = 'queued'
     order by t.queue_name, t.message_id
  loop
    perform switchyard._follow_run_flow(run.run_id, task.step_slug, task.task_index,
      case when run.paused_at is null then 0 else switchyard.pause_hide_seconds() end);
  end loop;
  perform switchyard._start_ready_steps(run.run_id);
  perform switchyard._complete_run_if_done(run.run_id);
  return true;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/pause_hide_seconds.sql

-- How long a paused run's message stays hidden each time it is hidden
-- (docs/design/rerun.md): resume_run shows them again at once, so this only bounds how often a
-- paused run's
-- message is read and hidden again by a claim. One hour.
create or replace function switchyard.pause_hide_seconds()
returns int
language sql
immutable
set search_path = ''
as $$
  select 3600
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/pause_run.sql

-- Pauses a started run for an operator (docs/design/rerun.md): none of its tasks is claimed
-- until resume_run (a claim classifies them 'paused' and hides their messages); tasks a worker
-- runs finish and their successors are queued but not claimed. Waits, sleeps and the run's
-- deadline keep their rules (a paused run whose deadline passes is cancelled). `actor` (default:
-- the session's role) is recorded with the reason in the 'paused' event. Returns true when it
-- paused the run, false when it was paused already. A run that is not started is refused (55000
-- run_not_started); an unknown one 22023 run_unknown.
create or replace function switchyard.pause_run(
  run_id uuid, reason text default null, actor text default null
)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
begin
  select * into run from switchyard.runs r where r.run_id = pause_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', pause_run.run_id::text, format(
      'pause_run: run %s does not exist', coalesce(pause_run.run_id::text, 'null')));
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'pause_run: run %s is %s; only a started run can be paused', run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  return switchyard._pause_run(run.run_id,
    coalesce(nullif(btrim(reason), ''), 'paused by an operator'),
    coalesce(actor, session_user::text));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/rerun_run.sql

-- Reruns an ended run in place from one of its steps (docs/design/rerun.md): `from_step`
-- and every step depending on it, transitively, run again with fresh attempts, and so does every
-- step that did not end completed or skipped (a failed, cancelled or never started one has no
-- output to keep); every other step keeps its output. `input_patch`, a JSON object, is merged
-- into the run's input at the top level (input || input_patch) for the steps that run again (a
-- kept step keeps the output it computed from the old input). In one transaction, holding the
-- run's tasks and then its family's rows (the order of complete_tasks and retry_run, so a late
-- answer of an old attempt waits for the rerun or the rerun for it):
--   - _rerun_steps resets those steps (their tasks deleted, their old attempts fenced off);
--   - the run is started again: its output, error and end times cleared, its pause lifted, its
--     deadline the flow's runTimeout from now (or none);
--   - a 'rerun' event records who (`actor`, default the session's role), the step, the steps
--     that run again, the input patch and the status the run had; the status change writes its
--     'started' (or 'retried', from failed) event as ever;
--   - the ready steps start (_start_ready_steps). A flow step that runs again finds its child
--     run (_begin_child): a completed child gives its output again, a failed one is retried, a
--     cancelled one fails the step (rerun the child first). A wait step waits again.
-- Returns the number of steps that run again. Refused: an unknown run (22023 run_unknown), a
-- started run (55000 run_not_ended: cancel it, or wait for it to end), a step the run's flow does
-- not have (22023 step_unknown, +flow_slug, steps), an input patch that is not an object or a
-- run input that is not one (22023 input_patch_not_object).
create or replace function switchyard.rerun_run(
  run_id uuid, from_step text, input_patch jsonb default null, actor text default null
)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  again text[];
begin
  perform 1 from switchyard.step_tasks t where t.run_id = rerun_run.run_id
    order by t.queue_name, t.message_id for update;
  perform switchyard._lock_run_family(rerun_run.run_id);
  select * into run from switchyard.runs r where r.run_id = rerun_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', rerun_run.run_id::text, format(
      'rerun_run: run %s does not exist', coalesce(rerun_run.run_id::text, 'null')));
  end if;
  if run.status = 'started' then
    perform switchyard._refuse('55000', 'run_not_ended', 'run_id', run.run_id::text, format(
      'rerun_run: run %s is started; only a completed, failed or cancelled run can be rerun '
      '(cancel it, wait for it to end, or fork it)', run.run_id),
      context => jsonb_build_object('status', run.status));
  end if;
  if not exists (select 1 from switchyard.steps st
                  where st.flow_slug = run.flow_slug and st.step_slug = from_step) then
    perform switchyard._refuse('22023', 'step_unknown', 'from_step', from_step, format(
      'rerun_run: flow %s of run %s has no step %s; its steps: %s', to_json(run.flow_slug)::text,
      run.run_id, switchyard._clip(from_step),
      (select string_agg(st.step_slug, ', ' order by st.step_index) from switchyard.steps st
        where st.flow_slug = run.flow_slug)),
      context => jsonb_build_object('flow_slug', run.flow_slug, 'steps',
        (select jsonb_agg(st.step_slug order by st.step_index) from switchyard.steps st
          where st.flow_slug = run.flow_slug)));
  end if;
  if input_patch is not null
     and (jsonb_typeof(input_patch) <> 'object' or jsonb_typeof(run.input) <> 'object') then
    perform switchyard._refuse('22023', 'input_patch_not_object', 'input_patch',
      input_patch::text, format(
      'rerun_run: input patch %s of run %s is invalid: use a JSON object, merged into the run''s '
      'input at the top level, which must be an object too (it is %s); fork the run to give it '
      'another input', switchyard._clip(input_patch::text), run.run_id, jsonb_typeof(run.input)),
      context => jsonb_build_object('input_type', jsonb_typeof(run.input)));
  end if;
  again := switchyard._downstream_steps(run.flow_slug, array[from_step] || array(
    select ss.step_slug from switchyard.step_states ss
     where ss.run_id = run.run_id and ss.status not in ('completed', 'skipped')));
  perform switchyard._run_note(run.run_id, 'rerun', jsonb_build_object(
    'by', coalesce(actor, session_user::text), 'from_step', from_step, 'steps', to_jsonb(again),
    'input_patch', input_patch, 'previous_status', run.status));
  perform switchyard._rerun_steps(run.run_id, again);
  -- A traced run whose span was recorded at its end gets a span for its new life, a child of
  -- that one (docs/design/observability.md#metrics-traces-and-charts), as in retry_run.
  update switchyard.runs r
     set status = 'started', output = null, error = null, completed_at = null, failed_at = null,
         cancelled_at = null, paused_at = null, pause_reason = null,
         trace_context = case when r.run_span_taken
                              then switchyard.run_span_context(r.run_id, r.trace_context)
                              else r.trace_context end,
         span_started_at = case when r.run_span_taken then switchyard.clock_now()
                                else r.span_started_at end,
         run_span_taken = false,
         input = case when input_patch is null then r.input else r.input || input_patch end,
         deadline_at = switchyard.clock_now()
           + (select f.run_timeout from switchyard.flows f where f.flow_slug = r.flow_slug)
             * interval '1 second'
   where r.run_id = run.run_id;
  perform switchyard._start_ready_steps(run.run_id);
  perform switchyard._complete_run_if_done(run.run_id);
  return cardinality(again);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/rerun_user_run.sql

-- Reruns one of the signed-in user's own ended runs from a step (docs/design/rerun.md):
-- what rerun_run does, for a user (auth.uid()), only in a run they own (runs.owner), and only
-- when an operator listed the run's alias (the one alias_members records for its concrete flow,
-- or the flow's own slug for a flow started without one) in user_rerun_aliases. Refused with
-- 42501 (PostgREST answers 403), changing nothing: no signed-in user (not_signed_in); a run that
-- does not exist or is not theirs, alike, so that another user's run ids are not revealed
-- (run_not_owned); an alias not listed (alias_not_allowed). Then rerun_run's own refusals apply
-- (a started run, an unknown step, a patch that is not an object). The 'rerun' event records
-- `by` as 'user <id>'. Granted to no one: the operator grants EXECUTE to authenticated (the
-- opt-in). Security definer, so rerun_run itself stays ungranted to users.
create or replace function switchyard.rerun_user_run(
  run_id uuid, from_step text, input_patch jsonb default null
)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  user_id uuid;
  run_flow text;
  run_alias text;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    perform switchyard._refuse('42501', 'not_signed_in', 'run_id', rerun_user_run.run_id::text,
      format(
      'rerun_user_run(%s, %s): no signed-in user (auth.uid() is null): sign in, or rerun from a '
      'trusted server with rerun_run', coalesce(rerun_user_run.run_id::text, 'null'),
      switchyard._clip(rerun_user_run.from_step)));
  end if;
  select r.flow_slug into run_flow from switchyard.runs r
   where r.run_id = rerun_user_run.run_id and r.owner = user_id;
  if not found then
    perform switchyard._refuse('42501', 'run_not_owned', 'run_id', rerun_user_run.run_id::text,
      format(
      'rerun_user_run(%s, %s): run %s is not one of your runs: a signed-in user reruns only '
      'runs whose owner they are (runs.owner = auth.uid())',
      coalesce(rerun_user_run.run_id::text, 'null'), switchyard._clip(rerun_user_run.from_step),
      coalesce(rerun_user_run.run_id::text, 'null')));
  end if;
  select m.alias into run_alias from switchyard.alias_members m where m.flow_slug = run_flow;
  if not exists (select 1 from switchyard.user_rerun_aliases u
                  where u.alias = coalesce(run_alias, run_flow)) then
    perform switchyard._refuse('42501', 'alias_not_allowed', 'run_id', rerun_user_run.run_id::text,
      format(
      'rerun_user_run(%s, %s): signed-in users may not rerun runs of alias %s: an operator '
      'allows it with insert into switchyard.user_rerun_aliases (alias)',
      rerun_user_run.run_id, switchyard._clip(rerun_user_run.from_step),
      to_json(coalesce(run_alias, run_flow))::text),
      context => jsonb_build_object('alias', coalesce(run_alias, run_flow)));
  end if;
  return switchyard.rerun_run(rerun_user_run.run_id, rerun_user_run.from_step,
                              rerun_user_run.input_patch, 'user ' || user_id::text);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/resolve_flow.sql

-- The concrete flow a caller's name starts: the flow itself, or an alias's active version
-- (docs/design/versions.md). Refuses a name that is neither (22023 flow_or_alias_unknown). The
-- value it echoes is clipped.
create or replace function switchyard.resolve_flow(flow_or_alias text)
returns text
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  found_slug text;
begin
  select a.flow_slug into found_slug from switchyard.aliases a where a.alias = flow_or_alias;
  if found_slug is null then
    select f.flow_slug into found_slug from switchyard.flows f where f.flow_slug = flow_or_alias;
  end if;
  if found_slug is null then
    perform switchyard._refuse('22023', 'flow_or_alias_unknown', 'flow_or_alias', flow_or_alias,
      format(
      'unknown flow or alias %s: compile it (start a worker that lists it) first',
      switchyard._clip(flow_or_alias)));
  end if;
  return found_slug;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/resume_run.sql

-- Resumes a paused run (docs/design/rerun.md): every queued task's message is visible at
-- once (a retry's backoff still to run is cut short), and a task that ran out of attempts under
-- its step's whenExhausted 'pause' is queued again with a fresh budget of attempts (its attempt
-- numbers count on, so a late answer of an earlier attempt is still ignored): the retry of that
-- step. Records a 'resumed' event with `actor` (default: the session's role). Returns the number
-- of tasks queued again; 0 for a started run that is not paused. A run that is not started is
-- refused (55000 run_not_started); an unknown one 22023 run_unknown.
create or replace function switchyard.resume_run(run_id uuid, actor text default null)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  task record;
  q record;
  msg_id bigint;
  requeued int := 0;
begin
  select * into run from switchyard.runs r where r.run_id = resume_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', resume_run.run_id::text, format(
      'resume_run: run %s does not exist', coalesce(resume_run.run_id::text, 'null')));
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'resume_run: run %s is %s; only a started (paused) run can be resumed', run.run_id,
      run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  if run.paused_at is null then
    return 0;
  end if;
  update switchyard.runs r set paused_at = null, pause_reason = null where r.run_id = run.run_id;
  for task in
    select t.step_slug, t.task_index, t.queue_name, t.message_id, t.attempts_count,
           coalesce(st.max_attempts, f.max_attempts) as budget, st.concurrency_limit
      from switchyard.step_tasks t
      join switchyard.step_states ss on ss.run_id = t.run_id and ss.step_slug = t.step_slug
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
      join switchyard.flows f on f.flow_slug = ss.flow_slug
     where t.run_id = run.run_id and t.status = 'failed' and ss.status = 'started'
     order by t.queue_name, t.message_id
       for update of t
  loop
    select s into msg_id from pgmq.send(
      task.queue_name,
      switchyard._task_message(
        run.run_id, run.flow_slug, task.step_slug, nullif(task.task_index, 0), run.priority, 0,
        case when task.concurrency_limit is not null
             then switchyard._concurrency_key(run.run_id, run.flow_slug, task.step_slug,
                                              task.task_index) end),
      0) s;
    update switchyard.step_tasks t
       set status = 'queued', message_id = msg_id, worker_id = null,
           max_attempts = task.attempts_count + task.budget,
           queued_at = switchyard.clock_now(), failed_at = null
     where t.run_id = run.run_id and t.step_slug = task.step_slug
       and t.task_index = task.task_index;
    -- A task that ran out on the version its run moved off (move_run) runs on the run's now.
    perform switchyard._follow_run_flow(run.run_id, task.step_slug, task.task_index, 0);
    requeued := requeued + 1;
  end loop;
  for q in
    select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
      from switchyard.step_tasks t
     where t.run_id = run.run_id and t.status = 'queued'
     group by t.queue_name order by t.queue_name
  loop
    perform switchyard._hide_messages(q.queue_name, q.ids, array_fill(0, array[cardinality(q.ids)]));
  end loop;
  perform switchyard._run_note(run.run_id, 'resumed',
    jsonb_build_object('by', coalesce(actor, session_user::text), 'requeued', requeued));
  return requeued;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/retry_run.sql

-- Retries a failed run: its failed steps are queued again with fresh attempts and the run
-- is started again, so it continues where it stopped; completed steps are not run again.
-- Holding the row locks of the run's tasks and then the run, in one transaction:
--   - the run becomes 'started' again (its error and failed_at are cleared);
--   - a failed step with tasks becomes 'started'; one that failed without a task (an unmet
--     condition with whenUnmet 'fail', a map without an array) becomes 'created', so
--     _start_ready_steps decides it again;
--   - in every started step, each task no worker is running is queued again on its queue
--     snapshot with a new message (an old message still in the queue is archived first):
--     failed, skipped and queued tasks (the failure archived their messages). A completed
--     task whose answer came after the run had failed was not counted: then the step's
--     completed tasks run again too, and the step waits for all of its tasks;
--   - each queued task gets a fresh budget of attempts: max_attempts becomes attempts_count
--     plus the step's maxAttempts. Attempt numbers keep counting, so a late answer of an
--     earlier attempt is still ignored;
--   - tasks a worker is running are left alone: they complete as usual now that the run is
--     started, or stall recovery requeues them.
--   - a flow step whose child run ended meanwhile is examined again (_begin_child).
-- Returns the number of tasks queued again. A run that is not failed is refused (55000).
create or replace function switchyard.retry_run(run_id uuid)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  step record;
  task record;
  msg_id bigint;
  queued int := 0;
begin
  -- The run's tasks first, in (queue, message id) order, then the run: the order in which
  -- start_tasks and complete_tasks lock them, so a retry cannot deadlock with either.
  perform 1 from switchyard.step_tasks t where t.run_id = retry_run.run_id
    order by t.queue_name, t.message_id for update;
  select * into run from switchyard.runs r where r.run_id = retry_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', retry_run.run_id::text, format(
      'retry_run: run %s does not exist', coalesce(retry_run.run_id::text, 'null')));
  end if;
  if run.status <> 'failed' then
    perform switchyard._refuse('55000', 'run_not_failed', 'run_id', run.run_id::text, format(
      'retry_run: run %s is %s; only a failed run can be retried', run.run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  -- A traced run whose span was recorded at its end gets a span for its new life, a child of
  -- that one (docs/design/observability.md#metrics-traces-and-charts): its trace context becomes
  -- the recorded span's, so
  -- run_span_context derives a new span id, which its new tasks and child runs name.
  update switchyard.runs r
     set status = 'started', failed_at = null, error = null,
         trace_context = case when r.run_span_taken
                              then switchyard.run_span_context(r.run_id, r.trace_context)
                              else r.trace_context end,
         span_started_at = case when r.run_span_taken then switchyard.clock_now()
                                else r.span_started_at end,
         run_span_taken = false
   where r.run_id = run.run_id;
  update switchyard.step_states ss
     set status = case when exists (select 1 from switchyard.step_tasks t
                                     where t.run_id = ss.run_id and t.step_slug = ss.step_slug)
                       then 'started' else 'created' end,
         failed_at = null
   where ss.run_id = run.run_id and ss.status = 'failed';
  for step in
    select ss.step_slug, ss.remaining_tasks, st.step_type, st.step_index,
           coalesce(st.max_attempts, f.max_attempts) as budget,
           count(t.*)::int as total,
           count(t.*) filter (where t.status = 'completed')::int as completed
      from switchyard.step_states ss
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
      join switchyard.flows f on f.flow_slug = ss.flow_slug
      join switchyard.step_tasks t on t.run_id = ss.run_id and t.step_slug = ss.step_slug
     where ss.run_id = run.run_id and ss.status = 'started'
     group by ss.step_slug, ss.remaining_tasks, st.step_type, st.step_index, st.max_attempts,
              f.max_attempts
     order by st.step_index
  loop
    -- Answers accepted while the run was started counted the step down; more completed tasks
    -- than that means some answer came too late: run the step's completed tasks again too.
    if step.completed > step.total - step.remaining_tasks then
      update switchyard.step_states ss set remaining_tasks = step.total
       where ss.run_id = run.run_id and ss.step_slug = step.step_slug;
    end if;
    for task in
      select t.task_index, t.queue_name, t.message_id, t.attempts_count
        from switchyard.step_tasks t
       where t.run_id = run.run_id and t.step_slug = step.step_slug and t.status <> 'started'
         and (t.status <> 'completed' or step.completed > step.total - step.remaining_tasks)
       order by t.task_index
    loop
      -- A message of the task may still be in the queue (a stalled task made visible after
      -- the run failed, not read since): archive it, so only the new one names the task.
      perform pgmq.archive(task.queue_name, task.message_id);
      select s into msg_id from pgmq.send(
        task.queue_name,
        switchyard._task_message(
          run.run_id, run.flow_slug, step.step_slug, nullif(task.task_index, 0), run.priority, 0,
          switchyard._concurrency_key(run.run_id, run.flow_slug, step.step_slug, task.task_index)),
        0) s;
      update switchyard.step_tasks t
         set status = 'queued', message_id = msg_id, worker_id = null,
             max_attempts = task.attempts_count + step.budget,
             queued_at = switchyard.clock_now(), failed_at = null, completed_at = null, output = null
       where t.run_id = run.run_id and t.step_slug = step.step_slug
         and t.task_index = task.task_index;
      -- A task that failed on the version its run moved off (move_run) runs on the run's now.
      perform switchyard._follow_run_flow(run.run_id, step.step_slug, task.task_index, 0);
      queued := queued + 1;
    end loop;
  end loop;
  -- A flow step whose child run ended while this run was failed (_child_run_ended leaves a
  -- parent that is not started alone) is still started: it is examined again as when it began
  -- (_begin_child): a completed child gives its output, a failed one is retried, a cancelled
  -- one fails the step.
  for step in
    select ss.step_slug, ss.flow_slug
      from switchyard.step_states ss
      join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
      join switchyard.child_runs c on c.parent_run_id = ss.run_id and c.parent_step = ss.step_slug
      join switchyard.runs cr on cr.run_id = c.run_id
     where ss.run_id = run.run_id and ss.status = 'started' and st.step_type = 'flow'
       and cr.status in ('completed', 'failed', 'cancelled')
     order by st.step_index
  loop
    exit when not exists (select 1 from switchyard.runs r
                           where r.run_id = run.run_id and r.status = 'started');
    perform switchyard._begin_child(run.run_id, step.flow_slug, step.step_slug);
  end loop;
  perform switchyard._start_ready_steps(run.run_id);
  perform switchyard._complete_run_if_done(run.run_id);
  return queued;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/run_span_context.sql

-- The trace context of a run's span (docs/design/observability.md#metrics-traces-and-charts), from
-- the run and the trace
-- context it started with (its caller's, or its parent run's span for a child run): the same
-- trace, flags, and a span id derived from both, the first 16 hex digits of the SHA-256 of
-- '<run id>/<the caller's span id>'. Derived, never stored: a task's span is a child of it, a
-- child run starts with it, and take_run_spans names it for the span recorded at the run's end.
-- Null without a trace context.
create or replace function switchyard.run_span_context(run_id uuid, trace_context text)
returns text
language sql
immutable
parallel safe
as $$
  select split_part(trace_context, '-', 1) || '-' || split_part(trace_context, '-', 2) || '-'
         || left(encode(sha256(convert_to(run_id::text || '/' || split_part(trace_context, '-', 3),
                                          'UTF8')), 'hex'), 16)
         || '-' || split_part(trace_context, '-', 4)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/run_status.sql

-- One run's status document (docs/design/client.md): its status, input, output or error, owner
-- and times, its origin (docs/design/origins.md), its lineage (a fork's original and step) and pause
-- (docs/design/rerun.md), with each step's state, queue snapshot and attempts.
create or replace function switchyard.run_status(run_id uuid)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'run_id', r.run_id, 'flow_slug', r.flow_slug, 'started_as', r.started_as,
    'status', r.status, 'output', r.output, 'error', r.error,
    'started_at', r.started_at, 'completed_at', r.completed_at, 'failed_at', r.failed_at,
    'cancelled_at', r.cancelled_at, 'owner', r.owner,
    'forked_from', r.forked_from, 'from_step', r.from_step, 'paused_at', r.paused_at,
    'pause_reason', r.pause_reason,
    -- Where the run came from (docs/design/origins.md), or null for a plain start.
    'origin', r.origin,
    -- Per step: its queue snapshot and attempts (a map step: the most attempts any element
    -- used), its number of tasks (a map step's elements), the first error in element order,
    -- and why it was skipped.
    'steps', (select coalesce(jsonb_agg(jsonb_build_object(
                'step_slug', ss.step_slug, 'status', ss.status,
                'queue_name', t.queue_name, 'attempts', coalesce(t.attempts, 0),
                'tasks', coalesce(t.tasks, 0), 'error', t.error,
                'skip_reason', ss.skip_reason) order by st.step_index), '[]')
                from switchyard.step_states ss
                join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                left join lateral (
                  select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts,
                         count(*)::int as tasks,
                         (array_agg(x.error order by x.task_index) filter (where x.error is not null))[1] as error
                    from switchyard.step_tasks x
                   where x.run_id = ss.run_id and x.step_slug = ss.step_slug
                ) t on true
               where ss.run_id = r.run_id))
  from switchyard.runs r where r.run_id = run_status.run_id
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/run_trace_contexts.sql

-- The trace contexts of these runs' spans (run_span_context, docs/design/observability.md), one row
-- per run that started with one, by key: the parents of the worker's task spans, read for a
-- claimed batch only while tracing records spans.
create or replace function switchyard.run_trace_contexts(run_ids uuid[])
returns table (run_id uuid, trace_context text)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, switchyard.run_span_context(r.run_id, r.trace_context)
    from switchyard.runs r
   where r.run_id = any(run_ids) and r.trace_context is not null
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/start_flow.sql

-- Starts a run of a concrete flow or of an alias's active version.
--
-- `run_id` (optional) makes the start idempotent: the caller chooses the id, and a second
-- start with the same id returns the existing run and starts nothing. The same id with
-- another input, naming another flow, or for another owner, is refused (23505). Two concurrent
-- starts with one id create one run: the second insert waits for the first on the primary key
-- and then finds its row (docs/design/runs.md#starting-a-run).
--
-- `owner` (optional) records who the run is for: its events carry it for row-level security
-- (docs/design/client.md). `start_at` (optional) delays the steps (docs/design/waits.md,
-- start_flow_at);
-- `deadline_at` (optional) is the run's deadline, or the flow's runTimeout if that is sooner.
--
-- `key` with `mode` (optional, docs/design/flow-control.md#start-keys) names the start in the scope
-- of
-- `flow_or_alias`, in the caller's transaction (a rolled back start leaves no key):
-- 'singleton' returns the open run of the key, if any; 'dedupe' returns the key's run while it
-- is open and `ttl` seconds (default 86400) after it ended; 'debounce' starts the run `delay`
-- seconds later, and a start with the key before then gives the run its input and moves its
-- start to `delay` seconds from now, but never past `max_delay` seconds after the first start.
-- Concurrent starts with one key wait for each other on the key's row: one run per key.
--
-- Every argument after `owner` is defaulted, so the four-argument call of released runtimes
-- resolves to this function.
--
-- `trace_context` (optional) is the caller's W3C traceparent, stored with a new run so the spans
-- of its tasks join the caller's trace (docs/design/observability.md).
--
-- `priority` (optional, -10 to 10, default 0) orders the run's tasks on a shared queue: higher
-- first, each level worth priority_ageing_seconds of waiting
-- (docs/design/flow-control.md#priority-and-keys-in-turn).
--
-- `batch_key` (optional, 1 to 200 characters) makes the input an event of a batched flow (its
-- `batch` option): it joins the open batch of (flow_or_alias, batch_key), in the caller's
-- transaction, and the answer is the id of the run the batch becomes when it closes
-- (docs/design/batching.md, _batch_event). It takes no other option.
--
-- `origin` (optional) says where the run came from (docs/design/origins.md): a JSON object with
-- a `kind` of 1 to 40 lower-case letters, digits and underscores (row_trigger, backfill,
-- webhook, batch, …) and what names the source, at most 1 KiB. Stored with a new run and carried
-- by its 'started' event (`data.origin`); a keyed start that returns an existing run keeps that
-- run's origin. Null (every plain start) is checked by one comparison and stored as null.
create or replace function switchyard.start_flow(
  flow_or_alias text, input jsonb, run_id uuid default null, owner uuid default null,
  start_at timestamptz default null, deadline_at timestamptz default null,
  key text default null, mode text default null, ttl int default null, delay int default null,
  max_delay int default null, trace_context text default null, priority int default null,
  batch_key text default null, origin jsonb default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  concrete text;
  new_run uuid;
  id uuid;
  existing record;
  held switchyard.start_keys;
  kept record;
  live boolean;
  begins timestamptz := start_flow.start_at;
begin
  if start_flow.trace_context is not null
     and start_flow.trace_context !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' then
    perform switchyard._refuse('22023', 'trace_context_format', 'trace_context',
      start_flow.trace_context, format(
      'start_flow(%s): trace context %s is invalid: use a W3C traceparent, '
      '<2 hex>-<32 hex>-<16 hex>-<2 hex> in lower case, such as '
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      switchyard._clip(flow_or_alias), switchyard._clip(start_flow.trace_context)));
  end if;
  if start_flow.priority is not null and start_flow.priority not between -10 and 10 then
    perform switchyard._refuse('22023', 'priority_range', 'priority', start_flow.priority::text,
      format(
      'start_flow(%s): priority %s is invalid: use a whole number from -10 (last) to 10 (first); '
      '0 is the default', switchyard._clip(flow_or_alias), start_flow.priority),
      context => jsonb_build_object('min', -10, 'max', 10));
  end if;
  if start_flow.origin is not null and not (
       jsonb_typeof(start_flow.origin) = 'object'
       and coalesce(start_flow.origin ->> 'kind', '') ~ '^[a-z][a-z0-9_]{0,39}$'
       and jsonb_typeof(start_flow.origin -> 'kind') = 'string'
       and octet_length(start_flow.origin::text) <= 1024) then
    perform switchyard._refuse('22023', 'origin_invalid', 'origin',
      left(start_flow.origin::text, 200), format(
      'start_flow(%s): origin %s is invalid: pass a JSON object of at most 1024 bytes whose '
      '"kind" is 1 to 40 lower-case letters, digits and underscores starting with a letter, '
      'such as {"kind": "webhook", "function": "orders-webhook", "delivery": "d-1"}',
      switchyard._clip(flow_or_alias), switchyard._clip(start_flow.origin::text)),
      context => jsonb_build_object('max_bytes', 1024));
  end if;
  if input is null then
    perform switchyard._refuse('22023', 'input_sql_null', 'input', null, format(
      'start_flow(%s): input must be a JSON value, got SQL NULL (use ''null''::jsonb for JSON null)',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      context => jsonb_build_object('flow_or_alias', left(flow_or_alias, 200)));
  end if;
  if start_flow.batch_key is not null then
    return switchyard._batch_event(flow_or_alias, input, start_flow.batch_key,
      case when start_flow.run_id is not null then 'run_id'
           when start_flow.owner is not null then 'owner'
           when start_flow.start_at is not null then 'start_at'
           when start_flow.deadline_at is not null then 'deadline_at'
           when start_flow.key is not null then 'key'
           when start_flow.mode is not null then 'mode'
           when start_flow.ttl is not null then 'ttl'
           when start_flow.delay is not null then 'delay'
           when start_flow.max_delay is not null then 'max_delay'
           when start_flow.trace_context is not null then 'trace_context'
           when start_flow.priority is not null then 'priority' end);
  end if;
  if begins > switchyard.clock_now() + interval '365 days' then
    perform switchyard._refuse('22023', 'start_at_range', 'start_at', begins::text, format(
      'start_flow(%s): start_at %s is invalid: use a time at most 365 days from now',
      switchyard._clip(flow_or_alias), begins),
      context => jsonb_build_object('max', (switchyard.clock_now() + interval '365 days')::text));
  end if;
  perform switchyard._check_start_key(flow_or_alias, start_flow.run_id, start_flow.start_at,
                                      start_flow.key, start_flow.mode, start_flow.ttl,
                                      start_flow.delay, start_flow.max_delay);
  if start_flow.mode = 'dedupe' then
    ttl := coalesce(start_flow.ttl, 86400);
  end if;
  concrete := switchyard.resolve_flow(flow_or_alias);
  id := coalesce(start_flow.run_id, gen_random_uuid());

  if start_flow.key is not null then
    -- The key's row, locked; or a new one. A concurrent start with the key waits for this
    -- transaction on the primary key, then finds the row (or, if this one rolled back, none).
    loop
      select k.* into held from switchyard.start_keys k
       where k.started_as = flow_or_alias and k.key = start_flow.key
         for update;
      if not found then
        insert into switchyard.start_keys (started_as, key, mode, run_id, owner, ttl, delay,
                                           max_delay)
        values (flow_or_alias, start_flow.key, start_flow.mode, id, start_flow.owner,
                start_flow.ttl, start_flow.delay, start_flow.max_delay)
        on conflict on constraint start_keys_pkey do nothing;
        exit when found;
        continue;
      end if;
      select r.status, coalesce(r.completed_at, r.failed_at, r.cancelled_at) as ended_at,
             exists (select 1 from switchyard.delayed_starts d where d.run_id = r.run_id)
               as delayed
        into kept
        from switchyard.runs r where r.run_id = held.run_id;
      live := case held.mode
        when 'singleton' then kept.status = 'started'
        when 'dedupe' then kept.status = 'started'
                        or kept.ended_at + held.ttl * interval '1 second' > switchyard.clock_now()
                        or (kept.status is null and held.expires_at > switchyard.clock_now())
        else kept.status = 'started' and kept.delayed
      end;
      if coalesce(live, false) then
        -- Another owner's key is refused first, so the caller learns nothing else of it.
        if held.owner is distinct from start_flow.owner then
          perform switchyard._refuse('23505', 'key_other_owner', 'owner', start_flow.owner::text,
            format(
            'start_flow(%s): key %s names a run of another owner: '
            'a key names one run at a time; use another key for another owner',
            switchyard._clip(flow_or_alias), switchyard._clip(start_flow.key)),
            context => jsonb_build_object('key', left(start_flow.key, 200)));
        end if;
        if held.mode <> start_flow.mode then
          perform switchyard._refuse('23505', 'key_other_mode', 'mode', start_flow.mode, format(
            'start_flow(%s): key %s is held in mode %s, not %s: '
            'start with the mode the key has, or use another key',
            switchyard._clip(flow_or_alias), switchyard._clip(start_flow.key),
            held.mode, switchyard._clip(start_flow.mode)),
            context => jsonb_build_object('key', left(start_flow.key, 200), 'key_mode', held.mode));
        end if;
        if held.mode <> 'debounce' then
          return held.run_id;
        end if;
        -- Debounce: the run's row (expire_waits begins a delayed run holding it), then its
        -- delayed start, if it has not begun meanwhile.
        perform 1 from switchyard.runs r
         where r.run_id = held.run_id and r.status = 'started' for update;
        if found then
          update switchyard.delayed_starts d
             set start_at = least(switchyard.clock_now() + start_flow.delay * interval '1 second',
                                  held.first_at + start_flow.max_delay * interval '1 second')
           where d.run_id = held.run_id;
          if found then
            update switchyard.runs r set input = start_flow.input where r.run_id = held.run_id;
            update switchyard.start_keys k
               set delay = start_flow.delay, max_delay = start_flow.max_delay
             where k.started_as = held.started_as and k.key = held.key;
            return held.run_id;
          end if;
        end if;
      end if;
      -- The key's run ended, began (debounce) or expired (dedupe): the key names a new run.
      update switchyard.start_keys k
         set mode = start_flow.mode, run_id = id, owner = start_flow.owner, ttl = start_flow.ttl,
             delay = start_flow.delay, max_delay = start_flow.max_delay, first_at = switchyard.clock_now(),
             expires_at = null
       where k.started_as = held.started_as and k.key = held.key;
      exit;
    end loop;
    if start_flow.mode = 'debounce' then
      begins := switchyard.clock_now() + start_flow.delay * interval '1 second';
    end if;
  end if;

  -- The run's deadline (docs/design/client.md): the flow's runTimeout from now, or the
  -- start's deadline_at, whichever is first.
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner,
                               deadline_at, trace_context, priority, origin)
  select id, concrete, flow_or_alias, input, count(*), start_flow.owner,
         least(switchyard.clock_now() + (select f.run_timeout from switchyard.flows f where f.flow_slug = concrete)
                       * interval '1 second',
               start_flow.deadline_at),
         start_flow.trace_context, coalesce(start_flow.priority, 0), start_flow.origin
    from switchyard.steps st where st.flow_slug = concrete
  on conflict on constraint runs_pkey do nothing
  returning runs.run_id into new_run;
  if new_run is null then
    -- The id exists (committed, or committed while this insert waited for it): the same
    -- start again returns it; anything else under that id is refused.
    select r.flow_slug, r.started_as, r.input, r.owner into existing
      from switchyard.runs r where r.run_id = id;
    -- Another owner's run is refused first, so the caller learns nothing else of it.
    if existing.owner is distinct from start_flow.owner then
      perform switchyard._refuse('23505', 'run_id_other_owner', 'owner', start_flow.owner::text,
        format(
        'start_flow(%s): run id %s was started for another owner: '
        'a run id names one start; use a new id for another owner',
        to_json(flow_or_alias)::text, start_flow.run_id),
        context => jsonb_build_object('run_id', start_flow.run_id));
    end if;
    if existing.flow_slug <> concrete and existing.started_as <> flow_or_alias then
      perform switchyard._refuse('23505', 'run_id_other_flow', 'run_id', start_flow.run_id::text,
        format(
        'start_flow(%s): run id %s already belongs to a run of flow %s (started as %s): '
        'a run id names one start; use a new id for another flow',
        to_json(flow_or_alias)::text, start_flow.run_id, to_json(existing.flow_slug)::text,
        to_json(existing.started_as)::text),
        context => jsonb_build_object('flow_or_alias', left(flow_or_alias, 200),
          'existing_flow_slug', existing.flow_slug, 'existing_started_as', existing.started_as));
    end if;
    if existing.input <> input then
      perform switchyard._refuse('23505', 'run_id_other_input', 'input', input::text, format(
        'start_flow(%s): run id %s was started with another input: '
        'a run id names one start; use a new id for another input',
        to_json(flow_or_alias)::text, start_flow.run_id),
        context => jsonb_build_object('run_id', start_flow.run_id,
          'existing_input', left(existing.input::text, 200)));
    end if;
    return start_flow.run_id;
  end if;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select new_run, st.flow_slug, st.step_slug, st.deps_count
    from switchyard.steps st where st.flow_slug = concrete;
  -- The first run with a priority on a queue turns on that queue's priority read
  -- (docs/design/flow-control.md#priority-and-keys-in-turn); the
  -- row is written once, so later starts take no lock.
  if coalesce(start_flow.priority, 0) <> 0 then
    update switchyard.queues q set priority_used_at = switchyard.clock_now()
     where q.priority_used_at is null
       and q.queue_name in (select st.queue_name from switchyard.steps st
                             where st.flow_slug = concrete and st.queue_name is not null);
  end if;
  -- A delayed start (start_at in the future, or a debounce, docs/design/waits.md): the
  -- steps start when expire_waits finds the run due.
  if begins is null or begins <= switchyard.clock_now() then
    perform switchyard._start_ready_steps(new_run);
  else
    insert into switchyard.delayed_starts (run_id, start_at) values (new_run, begins);
  end if;
  return new_run;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/start_flow_at.sql

-- Starts a run as start_flow does with start_at (the same idempotent run_id, owner and
-- refusals), whose steps start at start_at instead of now (docs/design/waits.md): the run is
-- 'started' at
-- once (it keeps the version the alias names now, and counts as open for drain), its steps
-- begin on the first switchyard.expire_waits at or after start_at (the keep-alive tick), so up
-- to one tick late. A time not in the future starts at once; at most 365 days ahead.
create or replace function switchyard.start_flow_at(
  flow_or_alias text, input jsonb, start_at timestamptz, run_id uuid default null,
  owner uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if start_at is null or start_at > switchyard.clock_now() + interval '365 days' then
    perform switchyard._refuse('22023', 'start_at_range', 'start_at', start_at::text, format(
      'start_flow_at(%s): start_at %s is invalid: use a time at most 365 days from now',
      switchyard._clip(flow_or_alias), coalesce(start_at::text, 'null')),
      context => jsonb_build_object('max', (switchyard.clock_now() + interval '365 days')::text));
  end if;
  return switchyard.start_flow(flow_or_alias, input, run_id, owner, start_at);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/start_user_run.sql

-- Starts a run for the signed-in user (docs/design/client.md): only an alias an operator put
-- in user_start_aliases, owned by auth.uid(), at most user_runs_per_minute a minute (PT429).
-- The values it echoes are clipped.
create or replace function switchyard.start_user_run(
  alias text, input jsonb, run_id uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  user_id uuid;
  per_minute int;
  recent int;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    perform switchyard._refuse('42501', 'not_signed_in', 'alias', start_user_run.alias, format(
      'start_user_run(%s): no signed-in user (auth.uid() is null): '
      'sign in, or start the run from a trusted server with start_flow',
      switchyard._clip(start_user_run.alias)));
  end if;
  if not exists (select 1 from switchyard.user_start_aliases a
                  where a.alias = start_user_run.alias) then
    perform switchyard._refuse('42501', 'alias_not_allowed', 'alias', start_user_run.alias, format(
      'start_user_run(%s): signed-in users may not start this alias: '
      'an operator allows it with insert into switchyard.user_start_aliases',
      switchyard._clip(start_user_run.alias)));
  end if;
  -- A user's run id is random (version 4, as crypto.randomUUID() gives): the other versions,
  -- which a trusted server may derive from names or times (v3, v5, v7, ...) and so a user
  -- could predict, are never a user's, and a server's id can never be taken first by a user.
  if start_user_run.run_id is not null
     and start_user_run.run_id::text !~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' then
    perform switchyard._refuse('22023', 'run_id_not_random', 'run_id', start_user_run.run_id::text,
      format(
      'start_user_run(%s): run id %s is invalid: a signed-in user''s run id is a random '
      '(version 4) UUID, such as crypto.randomUUID() gives; other versions are kept for '
      'trusted servers', switchyard._clip(start_user_run.alias), start_user_run.run_id));
  end if;
  -- The same start again (a resubscription) returns the run and counts nothing.
  if start_user_run.run_id is not null
     and exists (select 1 from switchyard.runs r
                  where r.run_id = start_user_run.run_id and r.owner = user_id) then
    return switchyard.start_flow(start_user_run.alias, input, start_user_run.run_id, user_id);
  end if;
  -- At most user_runs_per_minute new runs per user in any minute; one user's starts are
  -- counted one at a time (a transaction-scoped lock per user), so concurrent calls cannot
  -- all pass the count.
  per_minute := switchyard.limit_value('user_runs_per_minute');
  perform pg_advisory_xact_lock(hashtextextended('switchyard.start_user_run ' || user_id::text, 0));
  select count(*) into recent from switchyard.runs r
   where r.owner = user_id and r.started_at > switchyard.clock_now() - interval '1 minute';
  if recent >= per_minute then
    -- PT429: PostgREST answers HTTP 429 Too Many Requests.
    perform switchyard._refuse('PT429', 'user_runs_per_minute', 'alias', start_user_run.alias,
      format(
      'start_user_run(%s): user %s started %s runs in the last minute, the limit '
      '(setting user_runs_per_minute): wait a minute and try again',
      switchyard._clip(start_user_run.alias), user_id, recent),
      context => jsonb_build_object('limit', per_minute),
      hint => 'an operator sets the limit: select switchyard.set_setting(''user_runs_per_minute'', ''<runs>'')');
  end if;
  return switchyard.start_flow(start_user_run.alias, input, start_user_run.run_id, user_id);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/take_run_spans.sql

-- Up to `max_runs` traced runs that ended and whose span nobody recorded yet
-- (docs/design/observability.md#metrics-traces-and-charts), marked taken: a worker records each
-- one's span (switchyard.run, its start to its end,
-- with its outcome) as the child of the trace context the run started with, with the span id of
-- run_span_context. Locked with skip locked, so two workers never take the same run; read
-- through runs_span_pending, which holds only traced runs not yet taken. A run retried or rerun
-- after its span was taken is taken again at its new end: its span starts at the restart
-- (span_started_at), a child of the first (retry_run and rerun_run moved its trace context).
create or replace function switchyard.take_run_spans(max_runs int default 100)
returns table (
  run_id uuid, flow_slug text, flow text, status text, error text, started_at timestamptz,
  ended_at timestamptz, trace_context text, span_context text
)
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query
    with taken as (
      update switchyard.runs r set run_span_taken = true
        from (select x.run_id from switchyard.runs x
               where x.trace_context is not null and not x.run_span_taken
                 and x.status <> 'started'
               order by x.run_id
               limit greatest(coalesce(max_runs, 100), 1)
                 for update skip locked) s
       where r.run_id = s.run_id
      returning r.run_id, r.flow_slug, r.status, r.error,
                coalesce(r.span_started_at, r.started_at) as started_at,
                coalesce(r.completed_at, r.failed_at, r.cancelled_at) as ended_at,
                r.trace_context
    )
    select t.run_id, t.flow_slug, coalesce(am.alias, t.flow_slug), t.status, t.error,
           t.started_at, t.ended_at, t.trace_context,
           switchyard.run_span_context(t.run_id, t.trace_context)
      from taken t
      left join switchyard.alias_members am on am.flow_slug = t.flow_slug
     order by t.ended_at;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/_hide_messages.sql

-- Sets the visibility of a batch of messages in one statement: the claimed messages
-- (their step's timeout plus the margin) and a refused batch (visible again at once).
-- PGMQ 1.5 has only a one-message set_vt, and a call per message (dynamic SQL each) was
-- a sixth of the database time of a claim. This writes PGMQ's documented queue table
-- (msg_id, read_ct, enqueued_at, vt, message, headers) the way set_vt does (vt =
-- switchyard.queue_clock() + seconds), naming the table with PGMQ's own
-- pgmq.format_table_name(queue, 'q') as PGMQ's functions do (it lower-cases the name, so
-- any spelling PGMQ accepts reaches the same table). Messages gone meanwhile are skipped.
-- The callers, start_tasks and release_tasks, lock the messages' tasks first, in message
-- order.
create or replace function switchyard._hide_messages(queue text, ids bigint[], seconds int[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  execute format(
    'update pgmq.%I q set vt = switchyard.queue_clock() + make_interval(secs => v.secs)
       from unnest($1::bigint[], $2::int[]) as v(id, secs)
      where q.msg_id = v.id',
    pgmq.format_table_name(queue, 'q'))
  using ids, seconds;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/_keep_hidden.sql

-- Keeps each claimed message hidden at least `seconds` from now (its task's timeout plus the
-- margin), writing only the messages that would reappear sooner
-- (docs/design/claim.md#hiding-claimed-messages).
-- The worker reads with the visibility its queue's tasks need (read_visibility_seconds), so in
-- the common case the read already hid each message long enough and this writes nothing: each
-- message is then written twice in PGMQ's queue table (the read, the archive), not three times,
-- and a queue table's dead rows grow a third slower. A message read with less (an older worker,
-- a timeout raised after the read, a claim later than its window) is written as set_vt would,
-- like _hide_messages; a message hidden longer stays so (stall recovery and the failure path
-- set its visibility when it must reappear). Messages gone meanwhile are skipped. The test of vt
-- is written so that no index can answer it (vt minus the seconds, not vt alone): as a plain
-- range on vt the planner read PGMQ's vt index, dead entries and all, instead of probing each
-- message by its key, and in a long-lived queue the claim that wrote nothing took 5.6 ms where a
-- fresh one took 0.3 ms (BENCHMARKS.md, issue 27).
create or replace function switchyard._keep_hidden(queue text, ids bigint[], seconds int[])
returns void
language plpgsql
volatile
set search_path = ''
as $$
begin
  execute format(
    'update pgmq.%I q set vt = switchyard.queue_clock() + make_interval(secs => v.secs)
       from unnest($1::bigint[], $2::int[]) as v(id, secs)
      where q.msg_id = v.id and q.vt - make_interval(secs => v.secs) < switchyard.queue_clock()',
    pgmq.format_table_name(queue, 'q'))
  using ids, seconds;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/claim_batch.sql

-- The claim (docs/design/claim.md): turns the messages a worker read into started
-- tasks, all or nothing per batch. It locks the batch's runs and tasks, classifies every message
-- (classify_batch), refuses a batch with unsupported work whole (the function pauses), archives
-- stale messages, hides a paused run's again (docs/design/rerun.md), holds back what flow control
-- says must wait (docs/design/flow-control.md#rate-limits-and-keyed-concurrency), starts the
-- eligible tasks
-- and returns each with its input. Per message it probes unique keys only
-- (docs/design/claim.md#planner-settings), so its cost
-- does not grow with the backlog or the registry.
--
-- This is start_tasks (the call of every earlier worker, 0.4.0's among them, which hands it null)
-- with one more argument, `hidden_until`: the earliest `vt` the worker's read gave the batch
-- (PGMQ's read returns it). When every claimed message is hidden that long already (its timeout
-- plus the margin from now), the claim writes no message and skips _keep_hidden, its one dynamic
-- statement (docs/design/claim.md#hiding-claimed-messages). Null: _keep_hidden checks each
-- message. A wrong value can only let a claimed message reappear early, which a read then
-- classifies as a duplicate (left to stall recovery).
create or replace function switchyard.claim_batch(
  queue_name text, message_ids bigint[], worker_id uuid, supported_pairs text[],
  hidden_until timestamptz
)
returns setof switchyard.task_claim
language plpgsql
volatile
security definer
set search_path = ''
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  queue alias for queue_name;
  worker record;
  unsupported_ids bigint[];
  unsupported_pairs text[];
  stale_ids bigint[];
  gone_ids bigint[];          -- read, then archived by a move or a rerun: stale (below)
  paused_ids bigint[];
  eligible_ids bigint[];
  duplicate_ids bigint[];
  claimed_ids bigint[];
  claimed_secs int[];
  reason text;
  support text;
  task_ids bigint[];      -- the batch's tasks (parallel arrays, in message order)
  task_runs uuid[];
  task_steps text[];
  task_idxs int[];
  held_ids bigint[];      -- eligible, but held back by flow control
                          -- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency), and
                          -- their waits
  held_secs int[];
  slot_ids bigint[];      -- claimed with a keyed concurrency slot, and the slots
  slot_keys text[];
  claimed_flows text[];   -- the claimed tasks' flows, steps, attempts and waits (the counters)
  claimed_steps text[];
  claimed_attempts int[];
  claimed_waits double precision[];
  counted text[];         -- the figures counted per row (claims, retries, queue_wait)
begin
  if message_ids is null or cardinality(message_ids) = 0 then
    return;
  end if;
  select w.worker_id, w.queue_name, w.function_name, w.pair_set into worker
    from switchyard.workers w where w.worker_id = claim_batch.worker_id;
  if not found then
    perform switchyard._refuse('22023', 'worker_not_registered', 'worker_id',
      claim_batch.worker_id::text, format(
      'start_tasks: worker %s is not registered', claim_batch.worker_id));
  end if;
  if worker.queue_name <> queue then
    perform switchyard._refuse('22023', 'worker_queue_mismatch', 'queue_name', queue, format(
      'start_tasks: worker %s polls queue %s, not %s', worker.worker_id,
      switchyard._clip(worker.queue_name), switchyard._clip(queue)),
      context => jsonb_build_object('worker_id', worker.worker_id, 'worker_queue', worker.queue_name));
  end if;
  support := case when supported_pairs is null then worker.pair_set
                  else switchyard.pair_set(supported_pairs) end;

  -- The batch's runs first, in run order, FOR KEY SHARE (claims do not block each other): a
  -- failure, a cancel or a completion holds its run FOR UPDATE until it commits, so a claim
  -- that overlaps one waits for it, and the classification below (a statement of its own, so
  -- a newer snapshot) sees the run's new status: a task of a run that is no longer started is
  -- stale, never claimed. Without this lock a claim could start an element of a map after a
  -- sibling's failure had failed the run (the failure was not committed when the claim read the
  -- run). Runs before tasks, as cancel_run locks them; a task's run never changes, so the
  -- unlocked probe that finds it is exact.
  perform 1
     from switchyard.runs r
    where r.run_id in (select l.run_id
                         from (select distinct u.id from unnest(message_ids) as u(id)) b
                         cross join lateral (select t.run_id from switchyard.step_tasks t
                                              where t.queue_name = queue and t.message_id = b.id
                                              limit 1) l)
    order by r.run_id
      for key share of r;

  -- Lock every task of the batch, in message order, before deciding anything, so the
  -- classification holds until the claim commits. One unique-index probe per message:
  -- the LIMIT keeps the planner from replacing the probes with a scan of the whole queue
  -- when its statistics are stale (as they are right after a burst of new work), which
  -- would make every claim cost as much as the backlog.
  select coalesce(array_agg(b.id order by b.id), '{}'),
         coalesce(array_agg(l.run_id order by b.id), '{}'),
         coalesce(array_agg(l.step_slug order by b.id), '{}'),
         coalesce(array_agg(l.task_index order by b.id), '{}')
    into task_ids, task_runs, task_steps, task_idxs
    from (select distinct u.id from unnest(message_ids) as u(id) order by u.id) b
    cross join lateral (select t.run_id, t.step_slug, t.task_index from switchyard.step_tasks t
                         where t.queue_name = queue and t.message_id = b.id
                         limit 1 for update) l;

  select array_agg(c.message_id order by c.message_id) filter (where c.class = 'unsupported'),
         array_agg(distinct coalesce(c.flow_slug || '/' || c.step_slug, '(no task)'))
           filter (where c.class = 'unsupported'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'stale'),
         coalesce(array_agg(c.message_id) filter (where c.class = 'eligible'), '{}'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'duplicate'),
         array_agg(c.message_id order by c.message_id) filter (where c.class = 'paused')
    into unsupported_ids, unsupported_pairs, stale_ids, eligible_ids, duplicate_ids, paused_ids
    from switchyard.classify_batch(queue, message_ids, support) c;

  -- A message read before the SQL core took it off this queue names no task here: a move
  -- re-sent its task on the new version's queue (_follow_run_flow), a rerun deleted its task
  -- (_rerun_steps), each archiving the message, so it is in the queue no more. Such a read is
  -- stale, not unsupported work: it must not pause the function. Looked for only when the batch
  -- has an unsupported message (one probe of the queue's table per such message).
  if unsupported_ids is not null then
    execute format(
      'select array_agg(u.id order by u.id) from unnest($1) u(id)
        where not exists (select 1 from switchyard.step_tasks t
                           where t.queue_name = $2 and t.message_id = u.id)
          and not exists (select 1 from pgmq.%I m where m.msg_id = u.id)',
      pgmq.format_table_name(queue, 'q'))
      into gone_ids using unsupported_ids, queue;
    if gone_ids is not null then
      unsupported_ids := nullif(array(select u.id from unnest(unsupported_ids) u(id)
                                       where u.id <> all (gone_ids)), '{}');
      stale_ids := coalesce(stale_ids, '{}') || gone_ids;
    end if;
  end if;

  if unsupported_ids is not null then
    -- Refuse the whole batch: nothing claimed, no attempt consumed, nothing
    -- archived; every message visible again; the queue function pauses durably.
    perform switchyard._hide_messages(
      queue, message_ids, array_fill(0, array[cardinality(message_ids)]));
    reason := format(
      'unsupported work on queue %s at %s: message ids [%s]; unsupported flow/step pairs [%s]',
      queue, to_char(switchyard.clock_now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
      array_to_string(unsupported_ids, ', '), array_to_string(unsupported_pairs, ', '));
    update switchyard.worker_functions wf
       set paused_at = switchyard.clock_now(), pause_reason = reason,
           pause_detail = jsonb_build_object(
             'queue', queue,
             'message_ids', (select jsonb_agg(u.id::text order by u.id)
                               from unnest(unsupported_ids) u(id)),
             'pairs', to_jsonb(unsupported_pairs))
     where wf.function_name = worker.function_name and wf.paused_at is null;
    update switchyard.workers w
       set deprecated_at = coalesce(w.deprecated_at, switchyard.clock_now()), stop_reason = reason
     where w.worker_id = worker.worker_id;
    return query
      select 'unsupported'::text, c.message_id, queue, c.flow_slug, c.step_slug,
             null::uuid, null::int, null::int, null::jsonb, null::jsonb, null::int, null::int
        from switchyard.classify_batch(queue, message_ids, support) c
       where c.class = 'unsupported';
    return;
  end if;

  if stale_ids is not null then
    perform pgmq.archive(queue, stale_ids);
  end if;
  -- A paused run's messages (docs/design/rerun.md): hidden again, no attempt used;
  -- resume_run shows them. Answered 'throttled', which every worker release skips.
  if paused_ids is not null then
    perform switchyard._hide_messages(queue, paused_ids,
      array_fill(switchyard.pause_hide_seconds(), array[cardinality(paused_ids)]));
  end if;

  -- Flow control (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): only when a step
  -- on this queue has a rate limit
  -- or a keyed concurrency (one probe of a partial index that is empty otherwise). A task held
  -- back is not started and uses no attempt; its same message is visible again when it may run.
  if cardinality(eligible_ids) > 0
     and exists (select 1 from switchyard.steps s
                  where s.queue_name = queue
                    and (s.rate_limit is not null or s.concurrency_limit is not null)) then
    select coalesce(array_agg(f.message_id order by f.message_id)
                      filter (where f.wait_seconds is not null), '{}'),
           coalesce(array_agg(f.wait_seconds order by f.message_id)
                      filter (where f.wait_seconds is not null), '{}'),
           array_agg(f.message_id) filter (where f.wait_seconds is null and f.slot is not null),
           array_agg(f.slot) filter (where f.wait_seconds is null and f.slot is not null)
      into held_ids, held_secs, slot_ids, slot_keys
      from switchyard._flow_control(queue, eligible_ids) f;
    if cardinality(held_ids) > 0 then
      eligible_ids := array(select e from unnest(eligible_ids) e where e <> all (held_ids));
      perform switchyard._hide_messages(queue, held_ids, held_secs);
    end if;
  end if;

  with claimed as (
    update switchyard.step_tasks t
       set status = 'started', attempts_count = t.attempts_count + 1, started_at = switchyard.clock_now(),
           worker_id = worker.worker_id,
           -- The time earlier instances used of the step timeout: kept for the attempt they
           -- handed back (release_tasks), none for a new attempt.
           carried_ms = case when t.carried_attempt = t.attempts_count + 1 then t.carried_ms
                             else 0 end,
           carried_attempt = t.attempts_count + 1,
           concurrency_key = case when slot_ids is not null
                                  then slot_keys[array_position(slot_ids, t.message_id)] end
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
     where k.id = any (eligible_ids) and t.run_id = k.run_id and t.step_slug = k.step_slug
       and t.task_index = k.idx
    returning t.message_id, t.timeout - t.carried_ms / 1000 as seconds_left, t.flow_slug,
              t.step_slug, t.attempts_count, t.started_at - t.queued_at as waited
  )
  select coalesce(array_agg(c.message_id order by c.message_id), '{}'),
         coalesce(array_agg(c.seconds_left + switchyard.claim_margin_seconds()
                            order by c.message_id), '{}'),
         coalesce(array_agg(c.flow_slug), '{}'), coalesce(array_agg(c.step_slug), '{}'),
         coalesce(array_agg(c.attempts_count), '{}'),
         coalesce(array_agg(extract(epoch from c.waited)::double precision), '{}')
    into claimed_ids, claimed_secs, claimed_flows, claimed_steps, claimed_attempts, claimed_waits
    from claimed c;
  if cardinality(claimed_ids) > 0 then
    -- Only the messages the read did not already hide long enough
    -- (docs/design/claim.md#hiding-claimed-messages): none in the common case, and no statement
    -- at all when the read's earliest vt covers the longest need.
    if hidden_until is null
       or hidden_until < switchyard.queue_clock()
                         + make_interval(secs => (select max(s) from unnest(claimed_secs) s)) then
      perform switchyard._keep_hidden(queue, claimed_ids, claimed_secs);
    end if;
    -- The counters (docs/design/observability.md#counters-histograms-and-levels), in one call:
    -- every claim, the claims of a later attempt
    -- (retries), and, for a first attempt, how long its message waited since it could run
    -- (queued, plus the step's startDelay).
    select array_agg(c.metric), array_agg(c.f), array_agg(c.s), array_agg(c.w)
      into counted, claimed_flows, claimed_steps, claimed_waits
      from (select 'claims' as metric, x.f, x.s, null::double precision as w
              from unnest(claimed_flows, claimed_steps) as x(f, s)
            union all
            select 'retries', x.f, x.s, null
              from unnest(claimed_flows, claimed_steps, claimed_attempts) as x(f, s, a)
             where x.a > 1
            union all
            select 'queue_wait', x.f, x.s, x.w - st.start_delay
              from unnest(claimed_flows, claimed_steps, claimed_attempts, claimed_waits)
                     as x(f, s, a, w)
              join switchyard.steps st on st.flow_slug = x.f and st.step_slug = x.s
             where x.a = 1) c;
    perform switchyard._count_metrics(counted, array_fill(queue, array[cardinality(counted)]),
      claimed_flows, claimed_steps, null, claimed_waits);
  end if;
  if cardinality(held_ids) > 0 then
    perform switchyard._count_metrics(array['throttled'],
      array_fill(queue, array[cardinality(held_ids)]), null, null);
  end if;

  return query
    select 'claimed'::text, t.message_id, t.queue_name, t.flow_slug, t.step_slug, t.run_id,
           t.attempts_count, t.timeout,
           case
             -- A map task: its element of the run input (root map) or of the one
             -- dependency's output (docs/design/runs.md#map-steps). Never SQL NULL (a JSON
             -- null element is 'null'), so the worker never mistakes it for a root step.
             when st.step_type = 'map' then
               case when st.deps_count = 0 then r.input
                    else (select ds.output from switchyard.deps d
                            join switchyard.step_states ds
                              on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                           where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug
                           limit 1)
               end -> t.task_index
             -- As switchyard._dependency_outputs, inline: a skipped dependency is absent.
             when st.deps_count > 0 then
               coalesce((select jsonb_object_agg(d.dep_slug, ds.output)
                           from switchyard.deps d
                           join switchyard.step_states ds
                             on ds.run_id = t.run_id and ds.step_slug = d.dep_slug
                          where d.flow_slug = t.flow_slug and d.step_slug = t.step_slug
                            and ds.status = 'completed'), '{}'::jsonb)
           end,
           case when row_number() over (partition by t.run_id order by t.message_id) = 1
                then r.input end,
           t.task_index, t.carried_ms
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
      -- One probe of the whole key per claimed task: a join here let the plan probe by
      -- run_id alone and filter the rest, reading every task of a map run up to the element.
      cross join lateral (select x.message_id, x.queue_name, x.flow_slug, x.step_slug,
                                 x.run_id, x.attempts_count, x.timeout, x.task_index, x.carried_ms
                            from switchyard.step_tasks x
                           where x.run_id = k.run_id and x.step_slug = k.step_slug
                             and x.task_index = k.idx
                           limit 1) t
      join switchyard.runs r on r.run_id = t.run_id
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
     where k.id = any (claimed_ids)
    union all
    select 'duplicate'::text, k.id, queue, t.flow_slug, t.step_slug,
           null, null, null, null, null, t.task_index, null
      from unnest(task_ids, task_runs, task_steps, task_idxs) as k(id, run_id, step_slug, idx)
      cross join lateral (select x.flow_slug, x.step_slug, x.task_index
                            from switchyard.step_tasks x
                           where x.run_id = k.run_id and x.step_slug = k.step_slug
                             and x.task_index = k.idx
                           limit 1) t
     where k.id = any (duplicate_ids)
    union all
    select 'stale'::text, s, queue, null, null, null, null, null, null, null, null, null
      from unnest(stale_ids) s
    union all
    select 'throttled'::text, h, queue, null, null, null, null, null, null, null, null, null
      from unnest(held_ids || coalesce(paused_ids, '{}')) h;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/classify_batch.sql

-- Classifies one claimed batch (no side effects): the heart of the claim
-- (docs/design/claim.md#start_tasks). Identity is (queue_name, message_id) only: message bodies are
-- never trusted. `pair_set`
-- is a key from switchyard.pair_set(); each message costs index lookups only, so the cost does
-- not grow with the size of the registry. A map task's input is its element; 'skipped' tasks are
-- stale.
--   eligible    supported pair, task queued, run started and not paused
--   paused      supported pair, task queued, run paused (docs/design/rerun.md): hidden again
--   duplicate   supported pair, task started, run started (left to stall recovery)
--   stale       supported pair, task terminal (completed, failed, skipped) or run ended (archived)
--   unsupported no task for the message on this queue, or an unsupported pair
-- PL/pgSQL rather than SQL so that the plan is cached per session.
create or replace function switchyard.classify_batch(
  queue text, message_ids bigint[], pair_set text
)
returns table (message_id bigint, class text, flow_slug text, step_slug text)
language plpgsql
stable
set search_path = ''
as $$
begin
  return query
  select b.id,
         case
           when t.run_id is null or not t.supported then 'unsupported'
           when t.run_status not in ('started', 'paused')
                or t.status in ('completed', 'failed', 'skipped') then 'stale'
           when t.status = 'started' then 'duplicate'
           when t.run_status = 'paused' then 'paused'
           else 'eligible'
         end,
         t.flow_slug,
         t.step_slug
    from (select distinct u.id from unnest(message_ids) as u(id)) b
    left join lateral (
      select x.run_id, x.flow_slug, x.step_slug, x.status,
             -- The run's row, read once: a paused run's status reads 'paused' here.
             (select case when r.paused_at is not null and r.status = 'started' then 'paused'
                     else r.status end
                from switchyard.runs r where r.run_id = x.run_id) as run_status,
             exists (select 1 from switchyard.pair_sets s
                      where s.pair_set = classify_batch.pair_set
                        and s.pair = x.flow_slug || '/' || x.step_slug) as supported
        from switchyard.step_tasks x
       where x.queue_name = queue and x.message_id = b.id
       limit 1  -- a probe per message, never a scan of the queue (see start_tasks)
    ) t on true
   order by b.id;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/read_tasks.sql

-- One read of a queue in the order docs/design/flow-control.md#priority-and-keys-in-turn gives
-- (docs/design/claim.md#read): up to `qty` message
-- ids, hidden for `visibility_seconds`; none when no message may be read now. It does not wait:
-- the worker polls, sleeping between reads outside any statement, so no lock on a switchyard table
-- is held while it waits (a migration's preamble takes them all, docs/design/supabase.md). The
-- worker calls it only for
-- a queue that read_ordered(queue) names; any other it reads with PGMQ's own read_with_poll, in
-- message order, as every earlier release did. Here a plain queue gets pgmq.read.
--
-- The order:
--   - by rank: a message whose body has `ranked_at` (a run of priority p, _task_message) ranks
--     as if it had become visible p x priority_ageing_seconds earlier; any other by its send time,
--     in message order. Higher priority goes first, and a message that waited longer than the
--     levels between them goes before one of higher priority: none is starved;
--   - by turn: a message of a step with keyed concurrency (its body's `concurrency_key`) takes
--     its key's next turn, so keys are served round-robin (the first message of every key, then
--     the second, ...), and a key is given at most its free slots (the step's limit less its
--     started tasks): messages of a full key are not read at all, so they are neither written
--     nor counted as read while they wait.
-- Each side (ranked, unranked) offers its first candidates through its own index (the partial
-- index of ranked messages that _tune_queue_table gives every kit queue, and the primary key);
-- the chosen ones are then locked, skipping those another reader holds, and hidden. The claim
-- (start_tasks, _flow_control) still decides every start: the order is a hint, never a rule a
-- claim trusts.
create or replace function switchyard.read_tasks(
  queue_name text, visibility_seconds int, qty int
)
returns setof bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  keyed boolean;
  window_size int;
  used_keys text[];
  used_counts int[];
  full_keys text[];
  tbl text := pgmq.format_table_name(read_tasks.queue_name, 'q');
  c_ids bigint[];
  c_ranks numeric[];
  c_slots text[];
  c_steps text[];
  chosen bigint[];
begin
  if qty is null or qty not between 1 and 1000 then
    perform switchyard._refuse('22023', 'read_qty', 'qty', qty::text, format(
      'read_tasks(%s): qty %s is invalid: read 1 to 1000 messages at a time',
      switchyard._clip(queue), coalesce(qty::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 1000));
  end if;
  if visibility_seconds is null or visibility_seconds not between 0 and 86400 then
    perform switchyard._refuse('22023', 'read_visibility', 'visibility_seconds',
      visibility_seconds::text, format(
      'read_tasks(%s): visibility_seconds %s is invalid: use 0 to 86400 seconds',
      switchyard._clip(queue), coalesce(visibility_seconds::text, 'null')),
      context => jsonb_build_object('min', 0, 'max', 86400));
  end if;
  perform from switchyard.queues q where q.queue_name = queue;
  if not found then
    perform switchyard._refuse('22023', 'queue_unknown', 'queue_name', queue, format(
      'read_tasks: queue %s is not a queue of the kit: create it with ensure_shared_queue or '
      'adopt_queue, or deploy a flow whose steps use it', switchyard._clip(queue)));
  end if;
  -- Which queues are read in order is read_ordered's rule, here as for the worker.
  if not switchyard.read_ordered(queue) then
    return query select r.msg_id from pgmq.read(queue, visibility_seconds, qty) r;
    return;
  end if;
  -- Whether the read counts the keys' slots (a queue may be ordered by priority alone).
  keyed := exists (select 1 from switchyard.steps s
                    where s.queue_name = queue and s.concurrency_limit is not null);

  window_size := least(greatest(qty * 4, 50), 2000);
  if keyed then
    -- The keys holding slots now: every started task with a slot, through the partial index
    -- of those (as many as the limits allow, however long the queue).
    select coalesce(array_agg(k.slot), '{}'), coalesce(array_agg(k.used), '{}'),
           coalesce(array_agg(k.slot) filter (where k.used >= k.lim), '{}')
      into used_keys, used_counts, full_keys
      from (select t.concurrency_key as slot, count(*)::int as used,
                   min(s.concurrency_limit) as lim
              from switchyard.step_tasks t
              join switchyard.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
             where t.status = 'started' and t.concurrency_key is not null
               and t.queue_name = queue
             group by t.concurrency_key) k;
  end if;
  -- 1. The candidates, each side through its own index. Three statements rather than one: the
  -- two on the queue table are dynamic (its name), so they are planned on every call, and kept
  -- as small as PGMQ's own; the choice between them is static SQL, planned once per session.
  execute format($q$
    select coalesce(array_agg(c.msg_id), '{}'), coalesce(array_agg(c.rank), '{}'),
           coalesce(array_agg(c.slot), '{}'), coalesce(array_agg(c.step), '{}')
      from ((select m.msg_id, (m.message ->> 'ranked_at')::numeric as rank,
                    m.message ->> 'concurrency_key' as slot,
                    (m.message ->> 'flow_slug') || '/' || (m.message ->> 'step_slug') as step
               from pgmq.%1$I m
              where m.message ? 'ranked_at' and m.vt <= switchyard.queue_clock()
                and not coalesce(m.message ->> 'concurrency_key' = any ($2), false)
              order by (m.message ->> 'ranked_at')::numeric
              limit $1)
            union all
            (select m.msg_id, extract(epoch from m.enqueued_at), m.message ->> 'concurrency_key',
                    (m.message ->> 'flow_slug') || '/' || (m.message ->> 'step_slug')
               from pgmq.%1$I m
              where not m.message ? 'ranked_at' and m.vt <= switchyard.queue_clock()
                and not coalesce(m.message ->> 'concurrency_key' = any ($2), false)
              order by m.msg_id
              limit $1)) c$q$, tbl)
    into c_ids, c_ranks, c_slots, c_steps
    using window_size, coalesce(full_keys, '{}');
  if cardinality(c_ids) = 0 then
    return;
  end if;
  -- 2. Turns: each key's candidates in rank order, at most its free slots (its step's limit less
  -- its started tasks); then the first `qty` by (turn, rank, id).
  select coalesce(array_agg(t.id order by t.turn, t.rank, t.id), '{}') into chosen
    from (select x.id, x.rank, x.turn
            from (select c.id, c.rank, c.slot,
                         row_number() over (partition by coalesce(c.slot, c.id::text)
                                            order by c.rank, c.id) as turn,
                         (select s.concurrency_limit from switchyard.steps s
                           where c.slot is not null
                             and s.flow_slug = split_part(c.step, '/', 1)
                             and s.step_slug = split_part(c.step, '/', 2))
                           - coalesce(used_counts[array_position(used_keys, c.slot)], 0) as free
                    from unnest(c_ids, c_ranks, c_slots, c_steps) as c(id, rank, slot, step)) x
           where x.slot is null or x.free is null or x.turn <= x.free
           order by x.turn, x.rank, x.id
           limit qty) t;
  -- 3. Lock the chosen (by key; one another reader holds is left to it) and hide them.
  return query execute format($q$
    update pgmq.%1$I m
       set vt = switchyard.queue_clock() + make_interval(secs => $1), read_ct = m.read_ct + 1
      from (select x.msg_id from pgmq.%1$I x
             where x.msg_id = any ($2) and x.vt <= switchyard.queue_clock()
               for update skip locked) l
     where m.msg_id = l.msg_id
    returning m.msg_id$q$, tbl)
    using visibility_seconds, chosen;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/read_visibility_seconds.sql

-- The visibility a worker's read gives the messages it reads (docs/design/claim.md#read): its
-- claim window plus the longest task timeout of the steps on the queue plus the claim margin,
-- so the claim that follows finds every message hidden long enough and writes none of them
-- again (_keep_hidden). At most read_visibility_cap_seconds() (300) unless the window itself is
-- longer: a worker that dies between its read and its claim leaves the batch hidden that long
-- (its tasks are still queued, so stall recovery does not see them), and a task with a longer
-- timeout is hidden further by its claim. A queue with no step: the window alone. The timeouts
-- are read on every call (one probe of steps_queue per read), so a timeout changed live counts
-- from the next read.
create or replace function switchyard.read_visibility_seconds(queue_name text, claim_window int)
returns int
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  longest int;
begin
  if claim_window is null or claim_window < 1 or claim_window > 3600 then
    perform switchyard._refuse('22023', 'claim_window_range', 'claim_window', claim_window::text,
      format(
      'read_visibility_seconds: claim window %s is invalid: use whole seconds from 1 to 3600',
      coalesce(claim_window::text, 'null')));
  end if;
  select max(coalesce(st.timeout, f.timeout)) into longest
    from switchyard.steps st
    join switchyard.flows f on f.flow_slug = st.flow_slug
   where st.queue_name = read_visibility_seconds.queue_name;
  if longest is null then
    return claim_window;
  end if;
  return greatest(claim_window,
                  least(claim_window + longest + switchyard.claim_margin_seconds(),
                        switchyard.read_visibility_cap_seconds()));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/claim/start_tasks.sql

-- The claim (docs/design/claim.md#start_tasks): turns the messages a worker read into started
-- tasks, all or nothing per batch; the rules and their order are claim_batch's, which this calls
-- without the read's vt, so each claimed message's visibility is checked by _keep_hidden. The call
-- every earlier worker makes (0.4.0's among them) and the one the tests and tools use.
create or replace function switchyard.start_tasks(
  queue_name text, message_ids bigint[], worker_id uuid, supported_pairs text[] default null
)
returns setof switchyard.task_claim
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return query select * from switchyard.claim_batch(
    start_tasks.queue_name, start_tasks.message_ids, start_tasks.worker_id,
    start_tasks.supported_pairs, null::timestamptz);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/_check_task_output.sql

-- Step output: a completion over the limit is refused. The worker measures the same way before
-- it sends (jsonTextBytes) and fails the attempt instead, so it never gets here. JSON text is at
-- most six times its jsonb size and the limit is at least 64 KiB, so a smaller value needs no look.
create or replace function switchyard._check_task_output()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem jsonb := switchyard._json_size_problem(new.output, 'max_output_bytes');
begin
  if problem is not null then
    perform switchyard._refuse('22023', 'max_output_bytes', 'output', problem ->> 'excerpt', format(
      'complete_tasks: the output of step %s of run %s is %s bytes of JSON, over the limit of %s '
      'bytes (setting max_output_bytes)',
      to_json(new.step_slug)::text, new.run_id, problem ->> 'size', problem ->> 'limit'),
      context => jsonb_build_object('size', (problem ->> 'size')::bigint,
        'limit', (problem ->> 'limit')::int, 'run_id', new.run_id, 'step_slug', new.step_slug),
      hint => 'return a smaller value (store large data elsewhere and return a reference), or '
             'raise the limit: select switchyard.set_setting(''max_output_bytes'', ''<bytes>'')');
  end if;
  return new;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/_record_failed_attempt.sql

-- The trigger step_tasks_failed_attempt: a started task's last_failed_at moved, so its attempt
-- failed (fail_task_with, recover_stalled, or any later path that sets it): one row of
-- switchyard.failed_attempts for the metrics' windows, and the counter of failed attempts
-- (docs/design/observability.md).
create or replace function switchyard._record_failed_attempt()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  insert into switchyard.failed_attempts
    (run_id, step_slug, task_index, attempt, queue_name, flow_slug, failed_at)
  values (new.run_id, new.step_slug, new.task_index, new.attempts_count, new.queue_name,
          new.flow_slug, new.last_failed_at);
  -- The counter of failed attempts (docs/design/observability.md#counters-histograms-and-levels),
  -- which pruning the row above never lowers.
  perform switchyard._count_metrics(array['failed_attempts'], array[new.queue_name],
    array[new.flow_slug], array[new.step_slug]);
  return null;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/checkpoint_task.sql

-- Saves a running task's checkpoint (ctx.checkpoint; docs/design/worker.md#worker-states-and-parts,
-- "Checkpoints"):
-- only while `attempt` holds the task (started, that attempt), else 55000 attempt_not_current
-- and nothing changes. The state is at most max_checkpoint_bytes() of JSON text (22023
-- checkpoint_too_large, naming the size and the limit). The task's message stays hidden for its
-- timeout from now, so a handler that checkpoints is not taken over while it works. Returns the
-- state's size in bytes.
create or replace function switchyard.checkpoint_task(
  run_id uuid, step_slug text, task_index int, attempt int, state jsonb
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  size int := octet_length(state::text);
begin
  if state is null then
    perform switchyard._refuse('22023', 'checkpoint_null', 'state', null,
      'checkpoint: the state is null: give a JSON value');
  end if;
  if size > switchyard.max_checkpoint_bytes() then
    perform switchyard._refuse('22023', 'checkpoint_too_large', 'state', state::text, format(
      'checkpoint of step %s is %s bytes of JSON, over the limit of %s bytes: checkpoint a '
      'position (a cursor, counters), not the data', switchyard._clip(step_slug), size,
      switchyard.max_checkpoint_bytes()),
      context => jsonb_build_object('size', size, 'limit', switchyard.max_checkpoint_bytes()));
  end if;
  select * into task from switchyard.step_tasks t
   where t.run_id = checkpoint_task.run_id and t.step_slug = checkpoint_task.step_slug
     and t.task_index = checkpoint_task.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    perform switchyard._refuse('55000', 'attempt_not_current', 'attempt', attempt::text, format(
      'checkpoint: attempt %s of step %s (task %s) of run %s does not hold the task (%s)',
      attempt, switchyard._clip(step_slug), task_index, run_id,
      case when not found then 'no such task'
           else format('%s, attempt %s', task.status, task.attempts_count) end));
  end if;
  insert into switchyard.task_checkpoints as c (run_id, step_slug, task_index, state, attempt)
  values (checkpoint_task.run_id, checkpoint_task.step_slug, checkpoint_task.task_index, state,
          attempt)
  on conflict on constraint task_checkpoints_pkey do update
    set state = excluded.state, attempt = excluded.attempt, saved_at = switchyard.clock_now();
  perform pgmq.set_vt(task.queue_name, task.message_id, task.timeout);
  return size;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/clear_checkpoint.sql

-- Deletes a running task's checkpoint (ctx.clearCheckpoint;
-- docs/design/worker.md#worker-states-and-parts,
-- "Checkpoints"): only while `attempt` holds the task (started, that attempt), else 55000
-- attempt_not_current and nothing changes, as checkpoint_task. The next attempt's ctx.resume()
-- reads nothing, so a handler that finds its saved state bad can start over. Returns whether
-- there was one.
create or replace function switchyard.clear_checkpoint(
  run_id uuid, step_slug text, task_index int, attempt int
)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
begin
  select * into task from switchyard.step_tasks t
   where t.run_id = clear_checkpoint.run_id and t.step_slug = clear_checkpoint.step_slug
     and t.task_index = clear_checkpoint.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    perform switchyard._refuse('55000', 'attempt_not_current', 'attempt', attempt::text, format(
      'clear checkpoint: attempt %s of step %s (task %s) of run %s does not hold the task (%s)',
      attempt, switchyard._clip(step_slug), task_index, run_id,
      case when not found then 'no such task'
           else format('%s, attempt %s', task.status, task.attempts_count) end));
  end if;
  delete from switchyard.task_checkpoints c
   where c.run_id = clear_checkpoint.run_id and c.step_slug = clear_checkpoint.step_slug
     and c.task_index = clear_checkpoint.task_index;
  return found;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/complete_tasks.sql

-- The completion (docs/design/claim.md#dispatch-and-completion): records a batch of task outputs in
-- one call, in
-- (queue_name, message_id) order. Each task is accepted only while its attempt holds it; a
-- step's state counts its tasks down and completes with its last one; the successors of plain
-- steps start together (one send per queue), the rest through _start_ready_steps; a run with no
-- step left completes with its output. Returns one row per item: whether it was accepted.
create or replace function switchyard.complete_tasks(completions jsonb)
returns table (ok boolean)
language plpgsql
volatile
security definer
set search_path = ''
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
as $$
declare
  acc_ords bigint[];      -- accepted items (parallel arrays)
  acc_runs uuid[];
  acc_steps text[];
  acc_idxs int[];
  acc_flows text[];
  acc_outputs jsonb[];
  acc_queues text[];
  acc_messages bigint[];
  live_runs uuid[];       -- runs of accepted items that are still started
  timed_queues text[];    -- the tasks completed here, and their durations (the counters)
  timed_flows text[];
  timed_steps text[];
  timed_secs double precision[];
  refused_ords bigint[];  -- accepted items of cancelled runs: the answer is refused
  done_runs uuid[];       -- steps completed by this call (parallel arrays)
  done_steps text[];
  done_flows text[];
  feeding boolean;        -- a step completed here has dependents
  advancing uuid[];       -- runs that may have steps to start now
  seg record;             -- consecutive advancing runs, plain or not
  new_runs uuid[];        -- the tasks of plain runs' ready steps (parallel arrays)
  new_flows text[];
  new_steps text[];
  q record;
  next_run uuid;
  big record;             -- a map whose aggregate is over max_map_output_bytes
  map_limit bigint;
  err_state text;
  err_message text;
begin
  if completions is null or jsonb_typeof(completions) <> 'array' then
    perform switchyard._refuse('22023', 'completions_not_array', 'completions', completions::text,
      'complete_tasks: completions must be a JSON array of {run_id, step_slug, attempt, output}');
  end if;

  -- Lock the listed tasks in (queue, message id) order; keep those the item's attempt holds.
  -- Two probes per item, each a LATERAL (... LIMIT 1) on a unique key: the task's message
  -- key by its primary key, then, in message order, the lock by that key. A join filtered on
  -- the status instead let the planner read every started task of every queue through the
  -- partial index step_tasks_worker (dead entries included), so the cost grew with the
  -- history (docs/design/claim.md#planner-settings).
  select coalesce(array_agg(x.ord order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.run_id order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.step_slug order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.task_index order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.flow_slug order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.output order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.queue_name order by x.run_id, x.step_slug, x.task_index), '{}'),
         coalesce(array_agg(x.message_id order by x.run_id, x.step_slug, x.task_index), '{}')
    into acc_ords, acc_runs, acc_steps, acc_idxs, acc_flows, acc_outputs, acc_queues, acc_messages
    from (
      select k.ord, l.run_id, l.step_slug, l.task_index, l.flow_slug, k.output, l.queue_name,
             l.message_id, l.status, l.attempts_count, k.attempt
        from (select i.ord, i.output, i.attempt, m.queue_name, m.message_id
                from (select distinct on (e.run_id, e.step_slug, e.task_index) e.*
                        from (select c.ord, (c.value ->> 'run_id')::uuid as run_id,
                                     c.value ->> 'step_slug' as step_slug,
                                     coalesce((c.value ->> 'task_index')::int, 0) as task_index,
                                     (c.value ->> 'attempt')::int as attempt,
                                     coalesce(c.value -> 'output', 'null') as output
                                from jsonb_array_elements(completions) with ordinality as c(value, ord)) e
                       order by e.run_id, e.step_slug, e.task_index, e.ord) i
                cross join lateral (select t.queue_name, t.message_id from switchyard.step_tasks t
                                     where t.run_id = i.run_id and t.step_slug = i.step_slug
                                       and t.task_index = i.task_index
                                     limit 1) m
               order by m.queue_name, m.message_id) k
        cross join lateral (select t.run_id, t.step_slug, t.task_index, t.flow_slug, t.queue_name,
                                   t.message_id, t.status, t.attempts_count
                              from switchyard.step_tasks t
                             where t.queue_name = k.queue_name and t.message_id = k.message_id
                             limit 1 for update) l
    ) x
   where x.status = 'started' and x.attempts_count = x.attempt;

  if cardinality(acc_ords) > 0 then
    select coalesce(array_agg(x.run_id) filter (where x.status = 'started'), '{}'),
           coalesce(array_agg(a.ord) filter (where x.status = 'cancelled'), '{}')
      into live_runs, refused_ords
      from (select r.run_id, r.status from switchyard.runs r
             where r.run_id = any (acc_runs) order by r.run_id for update) x
      left join unnest(acc_ords, acc_runs) as a(ord, run_id)
        on a.run_id = x.run_id and x.status = 'cancelled';

    -- The late answer of a handler whose run was cancelled is refused (ok false): its task is
    -- cancelled like the run's queued tasks (cancel_run), its output is not kept, and nothing
    -- counts it as a completion. A failed run's late answer is recorded (retry_run reruns it).
    -- The completed tasks' durations (claim to completion) feed the histogram of the
    -- counters (docs/design/observability.md#counters-histograms-and-levels), whose count is the
    -- completions.
    with finished as (
      update switchyard.step_tasks t
         set status = case when r.refused then 'cancelled' else 'completed' end,
             completed_at = case when r.refused then null else switchyard.clock_now() end,
             output = case when r.refused then null else a.output end,
             worker_id = case when r.refused then null else t.worker_id end
        from unnest(acc_ords, acc_runs, acc_steps, acc_idxs, acc_outputs)
               as a(ord, run_id, step_slug, idx, output)
        cross join lateral (select a.ord = any (refused_ords) as refused) r
       where t.run_id = a.run_id and t.step_slug = a.step_slug and t.task_index = a.idx
      returning t.queue_name, t.flow_slug, t.step_slug, t.status,
                extract(epoch from t.completed_at - t.started_at)::double precision as secs
    )
    select array_agg(d.queue_name), array_agg(d.flow_slug), array_agg(d.step_slug),
           array_agg(d.secs)
      into timed_queues, timed_flows, timed_steps, timed_secs
      from finished d where d.status = 'completed';
    if timed_queues is not null then
      perform switchyard._count_metrics(array['task_duration'], timed_queues, timed_flows, timed_steps,
        null, timed_secs);
    end if;
    for q in
      select a.queue_name, array_agg(a.message_id order by a.message_id) as ids
        from unnest(acc_queues, acc_messages) as a(queue_name, message_id)
       group by a.queue_name order by a.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;

    -- A map step whose last elements complete here gets its outputs in one array, which its
    -- dependents receive whole. When that array would be more than max_map_output_bytes of
    -- JSON text ('[' + the outputs joined by ', ' + ']'), the step and its run fail here,
    -- before the array is built, naming the map, the size and the limit. Every element keeps
    -- its output and none is re-run for it (a retry of the run runs them again). Only batches
    -- with a map element look, and only a map's last completion sums its outputs.
    if exists (select 1 from unnest(acc_flows, acc_steps) as a(flow_slug, step_slug)
                 join switchyard.steps st
                   on st.flow_slug = a.flow_slug and st.step_slug = a.step_slug
                where st.step_type = 'map') then
      map_limit := switchyard.limit_value('max_map_output_bytes');
      for big in
        select g.run_id, g.step_slug, g.flow_slug, x.tasks, x.bytes
          from (select a.run_id, a.step_slug, a.flow_slug
                  from unnest(acc_runs, acc_steps, acc_flows) as a(run_id, step_slug, flow_slug)
                  join switchyard.steps st
                    on st.flow_slug = a.flow_slug and st.step_slug = a.step_slug
                   and st.step_type = 'map'
                  join switchyard.step_states ss
                    on ss.run_id = a.run_id and ss.step_slug = a.step_slug and ss.status = 'started'
                 where a.run_id = any (live_runs)
                 group by a.run_id, a.step_slug, a.flow_slug, ss.remaining_tasks
                having ss.remaining_tasks = count(*)) g
          cross join lateral (select count(*)::int as tasks,
                                     coalesce(sum(octet_length(t.output::text)), 0)
                                       + 2 * count(*) as bytes
                                from switchyard.step_tasks t
                               where t.run_id = g.run_id and t.step_slug = g.step_slug) x
         where x.bytes > map_limit
         order by g.run_id, g.step_slug
      loop
        update switchyard.step_states ss
           set status = 'failed', failed_at = switchyard.clock_now()
         where ss.run_id = big.run_id and ss.step_slug = big.step_slug;
        update switchyard.runs r
           set status = 'failed', failed_at = switchyard.clock_now(),
               error = format(
                 'map step %s: its %s outputs are %s bytes of JSON text together, over the limit '
                 'of %s bytes (setting max_map_output_bytes); no element is run again: return '
                 'smaller outputs (store large data elsewhere and return a reference) and retry '
                 'the run, or raise the limit with select switchyard.set_setting('
                 '''max_map_output_bytes'', ''<bytes>'')',
                 big.step_slug, big.tasks, big.bytes, map_limit)
         where r.run_id = big.run_id;
        perform switchyard._archive_queued(big.run_id);
        live_runs := array_remove(live_runs, big.run_id);
      end loop;
    end if;

    -- A run that ended meanwhile records the task and starts nothing. A step's state counts
    -- its tasks down (one for an ordinary step, one per element for a map) and completes
    -- with its last one: the output of an ordinary step's task, or a map's outputs in
    -- element order.
    with done as (
      update switchyard.step_states ss
         set remaining_tasks = ss.remaining_tasks - a.n,
             status = case when ss.remaining_tasks = a.n then 'completed' else ss.status end,
             completed_at = case when ss.remaining_tasks = a.n then switchyard.clock_now() end,
             output = case when ss.remaining_tasks = a.n then
                        case when a.step_type = 'map' then
                               (select jsonb_agg(t.output order by t.task_index)
                                  from switchyard.step_tasks t
                                 where t.run_id = ss.run_id and t.step_slug = ss.step_slug)
                             else a.output end
                      end
        from (select g.run_id, g.step_slug, count(*)::int as n, (array_agg(g.output))[1] as output,
                     min(st.step_type) as step_type
                from unnest(acc_runs, acc_steps, acc_flows, acc_outputs)
                       as g(run_id, step_slug, flow_slug, output)
                join switchyard.steps st on st.flow_slug = g.flow_slug and st.step_slug = g.step_slug
               where g.run_id = any (live_runs)
               group by g.run_id, g.step_slug) a
       where ss.run_id = a.run_id and ss.step_slug = a.step_slug and ss.status = 'started'
      returning ss.run_id, ss.step_slug, ss.flow_slug, ss.status,
                ss.status = 'completed'
                  and exists (select 1 from switchyard.deps d
                               where d.flow_slug = ss.flow_slug and d.dep_slug = ss.step_slug)
                  as feeds
    )
    select coalesce(array_agg(d.run_id) filter (where d.status = 'completed'), '{}'),
           coalesce(array_agg(d.step_slug) filter (where d.status = 'completed'), '{}'),
           coalesce(array_agg(d.flow_slug) filter (where d.status = 'completed'), '{}'),
           coalesce(bool_or(d.feeds), false)
      into done_runs, done_steps, done_flows, feeding
      from done d;
    -- The dependents of the completed steps count a dependency down; a batch whose completed
    -- steps have none (1-step flows, last steps) skips the statement and its trigger call.
    if feeding then
      update switchyard.step_states ss
         set remaining_deps = ss.remaining_deps - d.n
        from (select a.run_id, d.step_slug, count(*)::int as n
                from unnest(done_runs, done_steps, done_flows) as a(run_id, step_slug, flow_slug)
                join switchyard.deps d on d.flow_slug = a.flow_slug and d.dep_slug = a.step_slug
               group by a.run_id, d.step_slug) d
       where ss.run_id = d.run_id and ss.step_slug = d.step_slug;
    end if;
    -- Count the steps down; a run whose last step completed here completes in the same
    -- update, with the outputs of its completed leaf steps (no step depends on them; a
    -- skipped leaf is absent) as its output: _run_outputs, inlined into this statement (a SQL
    -- function), computes them for the completing runs only; a run that does not complete
    -- yet costs nothing more than its count.
    with counted as (
      update switchyard.runs r
         set remaining_steps = r.remaining_steps - c.n,
             status = case when r.remaining_steps = c.n then 'completed' else r.status end,
             completed_at = case when r.remaining_steps = c.n then switchyard.clock_now() end,
             output = case when r.remaining_steps = c.n then
                        coalesce((select o.output
                                    from switchyard._run_outputs(array[r.run_id]) o), '{}')
                      end
        from (select a.run_id, count(*)::int as n from unnest(done_runs) as a(run_id)
               group by a.run_id) c
       where r.run_id = c.run_id
      returning r.run_id, r.remaining_steps
    )
    select coalesce(array_agg(c.run_id order by c.run_id) filter (where c.remaining_steps > 0), '{}')
      into advancing
      from counted c;
    -- Successors. A run whose ready steps (created, no dependency left) are all plain (no
    -- condition, not a map, a wait or a sleep) has them started here together with its
    -- neighbours in run order that are plain too: one update of their states, then
    -- _queue_plain_tasks for all of them (one pgmq.send_batch per queue and start delay, one
    -- insert of their tasks), the path _start_ready_steps takes for plain steps too. Every
    -- other run (a condition, a map, a wait) goes through _start_ready_steps. Runs are taken in run order and each queue's messages are
    -- sent in (run, step index) order, so every queue numbers them as the calls per run did.
    -- (Only with something to start: over an empty array the custom plan is so much cheaper
    -- than the generic one that the plan cache would plan these statements on every call.)
    -- The successors start in a subtransaction: an error no rule foresaw there (a value that
    -- got past every check) never fails the completion of a valid output, which would make
    -- the finished handler run again. Then each advancing run starts its ready steps alone
    -- (_start_ready_steps), and a run whose start fails again fails by itself
    -- (_fail_run_unforeseen), naming the error. A deadlock or a cancel is the caller's to repeat.
    if cardinality(advancing) > 0 then
      begin
        for seg in
          select x.special, array_agg(x.run_id order by x.run_id) as runs
            from (select y.run_id, y.special, row_number() over (order by y.run_id) as n,
                         row_number() over (order by y.run_id)
                           - row_number() over (partition by y.special order by y.run_id) as island
                    from (select a.run_id,
                                 coalesce(bool_or(st.step_type <> 'single' or st.cond_if is not null
                                                  or st.cond_if_not is not null), false) as special
                            from unnest(advancing) as a(run_id)
                            left join switchyard.step_states ss
                              on ss.run_id = a.run_id and ss.status = 'created'
                             and ss.remaining_deps = 0
                            left join switchyard.steps st
                              on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
                           group by a.run_id) y) x
           group by x.special, x.island
           order by min(x.n)
        loop
          if seg.special then
            foreach next_run in array seg.runs loop
              perform switchyard._start_ready_steps(next_run);
            end loop;
            continue;
          end if;
          with moved as (
            update switchyard.step_states ss
               set status = 'started', started_at = switchyard.clock_now()
              from unnest(seg.runs) as a(run_id)
             where ss.run_id = a.run_id and ss.status = 'created' and ss.remaining_deps = 0
            returning ss.run_id, ss.flow_slug, ss.step_slug
          )
          select coalesce(array_agg(m.run_id order by m.run_id, st.step_index), '{}'),
                 coalesce(array_agg(m.flow_slug order by m.run_id, st.step_index), '{}'),
                 coalesce(array_agg(m.step_slug order by m.run_id, st.step_index), '{}')
            into new_runs, new_flows, new_steps
            from moved m
            join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug;
          perform switchyard._queue_plain_tasks(new_runs, new_flows, new_steps);
        end loop;
      exception when others then
        if sqlstate like '40%' or sqlstate like '57%' then
          raise;
        end if;
        foreach next_run in array advancing loop
          begin
            perform switchyard._start_ready_steps(next_run);
          exception when others then
            if sqlstate like '40%' or sqlstate like '57%' then
              raise;
            end if;
            get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
            perform switchyard._fail_run_unforeseen(
              next_run, 'the steps ready after a completed step could not start',
              err_state, err_message);
          end;
        end loop;
      end;
    end if;
  end if;

  return query
    select c.ord = any (acc_ords) and not c.ord = any (coalesce(refused_ords, '{}'))
      from jsonb_array_elements(completions) with ordinality as c(value, ord)
     order by c.ord;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/fail_task_with.sql

-- A failed attempt with the handler's say (docs/design/claim.md#dispatch-and-completion,
-- docs/design/flow-control.md#rate-limits-and-keyed-concurrency): retry_after_seconds
-- (RetryAfter) replaces the backoff delay of the retry (attempts are counted as ever); with the
-- step's rate limit named, it also empties that limit's bucket until the retry is due, but for
-- at most the limit's own period (per_seconds), so every step sharing the limit backs off (an
-- HTTP 429) while one task cannot freeze a bucket others share for longer than its period (a
-- RetryAfter(604800) waits 7 days itself; the bucket, a minute for a limit per minute), and
-- set_rate_limit lifts the drain. non_retriable (NonRetriable) fails the task
-- now, its remaining attempts unused, as an exhausted task does (_exhaust_task: whenExhausted
-- holds). Null and false: fail_task's backoff, min(base_delay * 2^(attempt - 1), max_delay).
-- The exponent stops at 40: base_delay <= 86400 < 2^17, so the product stays below 2^57
-- (no bigint overflow at any attempt), and 2^40 s is beyond every accepted max_delay
-- (at most 604800), so the cap is unchanged by it. An attempt of a cancelled run answers
-- 'cancelled' (its task cancelled, no failed attempt counted). The retry of a task whose run
-- moved onto another version while it ran goes to that version (_follow_run_flow,
-- docs/design/rerun.md).
create or replace function switchyard.fail_task_with(
  run_id uuid, step_slug text, attempt int, error_message text, task_index int,
  retry_after_seconds int, non_retriable boolean
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  run_status text;
  run_flow text;
  delay_seconds int;
  limit_name text;
  error_text text := left(coalesce(error_message, 'unknown error'), 4000);
begin
  if retry_after_seconds is not null and (retry_after_seconds < 0 or retry_after_seconds > 604800) then
    perform switchyard._refuse('22023', 'retry_after_range', 'retry_after_seconds',
      retry_after_seconds::text, format(
      'fail_task_with: retry_after_seconds %s is out of range: use 0 to 604800 (7 days)',
      retry_after_seconds),
      context => jsonb_build_object('min', 0, 'max', 604800));
  end if;
  select * into task from switchyard.step_tasks t
   where t.run_id = fail_task_with.run_id and t.step_slug = fail_task_with.step_slug
     and t.task_index = fail_task_with.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    return 'ignored';
  end if;
  select r.status, r.flow_slug into run_status, run_flow
    from switchyard.runs r where r.run_id = task.run_id for update;
  -- The run was cancelled while the attempt ran (its handler may fail because of it: a refused
  -- progress report, an aborted call): not a failure. The task is cancelled like the run's
  -- queued tasks (cancel_run), with the handler's error kept and no failed attempt counted.
  if run_status = 'cancelled' then
    update switchyard.step_tasks t
       set status = 'cancelled', error = error_text, worker_id = null
     where t.run_id = task.run_id and t.step_slug = task.step_slug
       and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    return 'cancelled';
  end if;
  if task.attempts_count < task.max_attempts and run_status = 'started'
     and not coalesce(non_retriable, false) then
    delay_seconds := coalesce(retry_after_seconds,
      least(task.base_delay::bigint * (1::bigint << least(task.attempts_count - 1, 40)),
            task.max_delay)::int);
    update switchyard.step_tasks t
       set status = 'queued', error = error_text, worker_id = null, last_failed_at = switchyard.clock_now()
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.set_vt(task.queue_name, task.message_id, delay_seconds);
    -- The run moved onto another version while this attempt ran (move_run): the retry is the
    -- new version's (docs/design/rerun.md).
    if run_flow <> task.flow_slug then
      perform switchyard._follow_run_flow(task.run_id, task.step_slug, task.task_index,
                                          delay_seconds);
    end if;
    if retry_after_seconds is not null then
      select st.rate_limit into limit_name from switchyard.steps st
       where st.flow_slug = task.flow_slug and st.step_slug = task.step_slug;
      if limit_name is not null then
        update switchyard.rate_limits l
           set tokens = least(l.tokens, 0),
               refilled_at = greatest(l.refilled_at,
                 switchyard.clock_now() + make_interval(secs => least(retry_after_seconds, l.per_seconds)))
         where l.name = limit_name;
      end if;
    end if;
    return 'retrying';
  end if;
  -- The failed attempt's time for the metrics (docs/design/observability.md); an exhausted task is
  -- failed only here.
  update switchyard.step_tasks t set last_failed_at = switchyard.clock_now()
   where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
  return switchyard._exhaust_task(task, error_text);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/release_tasks.sql

-- Shutdown: a stopping worker hands back the tasks it still holds
-- (docs/design/worker.md#worker-states-and-parts), in
-- one transaction; the worker is marked deprecated in it, so a worker released by anyone else
-- stops at its next heartbeat. The worker drops whatever its released handlers return, so an
-- attempt number claimed again elsewhere is never answered twice.
--
-- An attempt is refunded (the task queued again with attempts_count - 1, its message visible at
-- once) only for work handed back: the worker names the task in `handed_back` (a JSON array of
-- {run_id, step_slug, task_index}: its handler honoured the shutdown, throwing the abort reason
-- within the grace period, or never started), or the task saved a checkpoint since its claim.
-- Refunds are bounded: at most max_task_refunds() per task, and the time the attempt ran on
-- every instance counts toward the step timeout (carried_ms, which start_tasks hands to the next
-- claim of the same attempt). Every other task the worker holds fails its attempt through
-- fail_task_with (retried with backoff while attempts remain, else its run fails or its step is
-- skipped), saying why: a handler still running after the grace period with no checkpoint since
-- its claim, a task handed back max_task_refunds() times, or an attempt past its step timeout.
-- `handed_back` null (a 0.3.0 runtime's call) names every task the worker holds.
-- Locks in (queue, message id) order, as complete_tasks and start_tasks do, then a failed
-- attempt's run (fail_task_with). Returns the tasks handed back, refunded or not.
create or replace function switchyard.release_tasks(worker_id uuid, handed_back jsonb default null)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  t record;
  released int := 0;
  max_refunds int := switchyard.max_task_refunds();
begin
  if worker_id is null then
    perform switchyard._refuse('22023', 'argument_missing', 'worker_id', null,
      'release_tasks: worker_id is null: pass the id of the stopping worker');
  end if;
  if handed_back is not null and jsonb_typeof(handed_back) <> 'array' then
    perform switchyard._refuse('22023', 'handed_back_not_array', 'handed_back', handed_back::text,
      format(
      'release_tasks: handed_back %s is invalid: pass a JSON array of {run_id, step_slug, '
      'task_index}, or null for every task the worker holds', left(handed_back::text, 200)));
  end if;
  update switchyard.workers w set deprecated_at = coalesce(w.deprecated_at, switchyard.clock_now())
   where w.worker_id = release_tasks.worker_id;
  for t in
    select x.run_id, x.step_slug, x.task_index, x.queue_name, x.message_id, x.attempts_count,
           x.timeout, x.refunds,
           x.carried_ms + (extract(epoch from switchyard.clock_now() - x.started_at) * 1000)::bigint as used_ms,
           handed_back is null
             or exists (select 1 from jsonb_array_elements(handed_back) h
                         where h ->> 'run_id' = x.run_id::text and h ->> 'step_slug' = x.step_slug
                           and coalesce(h ->> 'task_index', '0') = x.task_index::text) as named,
           exists (select 1 from switchyard.task_checkpoints c
                    where c.run_id = x.run_id and c.step_slug = x.step_slug
                      and c.task_index = x.task_index and c.saved_at >= x.started_at)
             as checkpointed
      from switchyard.step_tasks x
     where x.worker_id = release_tasks.worker_id and x.status = 'started'
     order by x.queue_name, x.message_id
       for update of x
  loop
    released := released + 1;
    if (t.named or t.checkpointed) and t.refunds < max_refunds
       and t.used_ms < t.timeout * 1000::bigint then
      update switchyard.step_tasks x
         set status = 'queued', attempts_count = x.attempts_count - 1, worker_id = null,
             refunds = x.refunds + 1, carried_ms = t.used_ms::int,
             carried_attempt = t.attempts_count
       where x.run_id = t.run_id and x.step_slug = t.step_slug and x.task_index = t.task_index;
      perform pgmq.set_vt(t.queue_name, t.message_id, 0);
      -- A task of a run moved while it ran follows the run now (docs/design/rerun.md).
      perform switchyard._follow_run_flow(t.run_id, t.step_slug, t.task_index, 0);
      continue;
    end if;
    perform switchyard.fail_task_with(t.run_id, t.step_slug, t.attempts_count,
      case
        when t.used_ms >= t.timeout * 1000::bigint then format(
          'step %s timed out: attempt %s ran %s s over the instances that handed it back, '
          'past its timeout of %s s', t.step_slug, t.attempts_count, round(t.used_ms / 1000.0, 1),
          t.timeout)
        when t.named or t.checkpointed then format(
          'attempt %s was handed back at an instance''s end %s times, the most a task may be '
          'without counting (max_task_refunds()): this hand-over counts as a failed attempt',
          t.attempts_count, t.refunds)
        else format(
          'attempt %s was still running when the worker stopped and its grace period ended, '
          'with no checkpoint since its claim: it counts as a failed attempt (watch ctx.signal, '
          'and save progress with ctx.checkpoint, to hand the task over without one)',
          t.attempts_count)
      end, t.task_index, null, false);
  end loop;
  return released;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/report_progress.sql

-- Records a running task's progress (ctx.progress; docs/design/observability.md): one 'progress'
-- event of its run, in the run's event order, with the owner copied for row-level security and
-- the task's index and the JSON as its data, and a NOTIFY like every other event. Only while
-- `attempt` holds the task (started, that attempt) of a started run, else 55000
-- attempt_not_current or run_not_started. The JSON text is at most limit_value
-- ('max_progress_bytes') (22023 progress_too_large), and a task reports at most limit_value
-- ('progress_per_second') events in any window of one second from the window's first event
-- (PT429 progress_rate, the SQLSTATE of start_user_run's rate). A refusal records nothing.
-- Returns the event's id.
--
-- Locks the task and then its run, the order of complete_tasks: the run's lock numbers the event
-- after every event committed before it, as the triggers do.
create or replace function switchyard.report_progress(
  run_id uuid, step_slug text, task_index int, attempt int, data jsonb
)
returns bigint
language plpgsql
volatile
set search_path = ''
as $$
declare
  task switchyard.step_tasks;
  run switchyard.runs;
  size int := octet_length(data::text);
  max_bytes int := switchyard.limit_value('max_progress_bytes');
  per_second int := switchyard.limit_value('progress_per_second');
  counted int;
  id bigint;
begin
  if data is null then
    perform switchyard._refuse('22023', 'progress_null', 'data', null,
      'progress: the data is null: give a JSON value');
  end if;
  if size > max_bytes then
    perform switchyard._refuse('22023', 'progress_too_large', 'data', data::text, format(
      'progress of step %s is %s bytes of JSON, over the limit of %s bytes (max_progress_bytes): '
      'report counters or a short message, not the data', switchyard._clip(step_slug), size,
      max_bytes),
      context => jsonb_build_object('size', size, 'limit', max_bytes));
  end if;
  select * into task from switchyard.step_tasks t
   where t.run_id = report_progress.run_id and t.step_slug = report_progress.step_slug
     and t.task_index = report_progress.task_index
   for update;
  if not found or task.status <> 'started' or task.attempts_count <> attempt then
    perform switchyard._refuse('55000', 'attempt_not_current', 'attempt', attempt::text, format(
      'progress: attempt %s of step %s (task %s) of run %s does not hold the task (%s)',
      attempt, switchyard._clip(step_slug), task_index, run_id,
      case when not found then 'no such task'
           else format('%s, attempt %s', task.status, task.attempts_count) end));
  end if;
  select * into run from switchyard.runs r where r.run_id = report_progress.run_id for update;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run_id::text, format(
      'progress: run %s is %s, not started: its events ended', run_id, run.status),
      context => jsonb_build_object('status', run.status));
  end if;
  insert into switchyard.task_progress as p
         (run_id, step_slug, task_index, window_started_at, window_count)
  values (report_progress.run_id, report_progress.step_slug, report_progress.task_index, switchyard.clock_now(), 1)
  on conflict on constraint task_progress_pkey do update
    set window_started_at = case when p.window_started_at > switchyard.clock_now() - interval '1 second'
                                 then p.window_started_at else switchyard.clock_now() end,
        window_count = case when p.window_started_at > switchyard.clock_now() - interval '1 second'
                            then p.window_count + 1 else 1 end
  returning p.window_count into counted;
  if counted > per_second then
    perform switchyard._refuse('PT429', 'progress_rate', 'data', data::text, format(
      'progress of step %s (task %s) of run %s is over the limit of %s events per second '
      '(progress_per_second): report less often, e.g. every few percent', switchyard._clip(step_slug),
      task_index, run_id, per_second),
      context => jsonb_build_object('limit', per_second));
  end if;
  insert into switchyard.run_events (run_id, owner, flow_slug, step_slug, event, task_index, data)
  values (run.run_id, run.owner, task.flow_slug, task.step_slug, 'progress',
          report_progress.task_index, data)
  returning event_id into id;
  perform pg_notify('switchyard_run_events', run_id::text);
  return id;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/reset_checkpoints.sql

-- Deletes the checkpoints of a run's tasks that no worker is running
-- (docs/design/worker.md#worker-states-and-parts,
-- "Checkpoints"): checkpoints survive failed attempts and retry_run on purpose (a task resumes
-- where it was), and this is the way to start them over, e.g. before retry_run when a saved
-- state is what made the run fail (retryRun(..., { resetCheckpoints: true }) does both in one
-- transaction). A started task keeps its checkpoint: its handler may still save one. Unknown
-- run: 22023 run_unknown. Returns the checkpoints deleted.
create or replace function switchyard.reset_checkpoints(run_id uuid)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  deleted int;
begin
  perform 1 from switchyard.runs r where r.run_id = reset_checkpoints.run_id;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', reset_checkpoints.run_id::text,
      format(
      'reset_checkpoints: run %s does not exist', coalesce(reset_checkpoints.run_id::text, 'null')));
  end if;
  delete from switchyard.task_checkpoints c
   using switchyard.step_tasks t
   where c.run_id = reset_checkpoints.run_id and t.run_id = c.run_id
     and t.step_slug = c.step_slug and t.task_index = c.task_index and t.status <> 'started';
  get diagnostics deleted = row_count;
  return deleted;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/_begin_child.sql

-- A 'flow' step just moved to started (docs/design/waits.md): starts its child run, a run
-- of the active version of the step's alias whose input is the step's input (the run input for
-- a root step, else its dependencies' outputs) and whose owner is the parent's. The child's id
-- is derived from the parent's run and step (_child_run_id, never a shape a signed-in user may
-- choose), and the link is kept in child_runs, so a retry of
-- the parent finds the same child instead of starting a second: a failed child is retried, a
-- completed one gives its output again. Returns true when the step is done already (the child
-- completed at once, or the step failed with the run: a child that could not start, one that
-- ended failed or cancelled); else the step waits for the child (_child_run_ended ends it).
create or replace function switchyard._begin_child(run uuid, flow text, step text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  st switchyard.steps;
  parent switchyard.runs;
  child uuid;
  child_run switchyard.runs;
  step_input jsonb;
begin
  select * into st from switchyard.steps s where s.flow_slug = flow and s.step_slug = step;
  select * into parent from switchyard.runs r where r.run_id = run;
  select c.run_id into child from switchyard.child_runs c
   where c.parent_run_id = run and c.parent_step = step;
  if child is null then
    if st.deps_count = 0 then
      step_input := parent.input;
    else
      step_input := switchyard._dependency_outputs(run, flow, step);
    end if;
    begin
      -- The child runs at its parent's priority
      -- (docs/design/flow-control.md#priority-and-keys-in-turn), in its trace under the parent
      -- run's
      -- span (docs/design/observability.md#metrics-traces-and-charts).
      child := switchyard.start_flow(st.child_alias, step_input,
                                     switchyard._child_run_id(run, step), parent.owner,
                                     priority => parent.priority,
                                     trace_context => switchyard.run_span_context(
                                       parent.run_id, parent.trace_context));
    exception when others then
      -- A deadlock, a serialization failure or a cancel is the caller's to repeat, not a refusal.
      if sqlstate like '40%' or sqlstate like '57%' then
        raise;
      end if;
      perform switchyard._fail_run_step(run, step, format(
        'flow step %s could not start a run of alias %s: %s', to_json(step)::text,
        to_json(st.child_alias)::text, sqlerrm));
      return true;
    end;
    insert into switchyard.child_runs (run_id, parent_run_id, parent_step) values (child, run, step);
  end if;
  select * into child_run from switchyard.runs r where r.run_id = child for update;
  if child_run.status = 'failed' then
    perform switchyard.retry_run(child);
    child_run.status := 'started';
  end if;
  if child_run.status = 'completed' then
    perform switchyard._complete_without_tasks(run, flow, step, child_run.output);
    return true;
  end if;
  if child_run.status = 'cancelled' then
    perform switchyard._fail_run_step(run, step, format(
      'flow step %s: its child run %s was cancelled (%s)', to_json(step)::text, child,
      child_run.error));
    return true;
  end if;
  perform switchyard._wait_event(run, flow, step, 'waiting');
  return false;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/_begin_wait.sql

-- A wait or sleep step just moved to started (by _start_ready_steps; a 'flow' step goes to
-- _begin_child): a wait whose signal
-- arrived early gets it now (returns true: the step is done, its dependents may be ready);
-- else the step waits (returns false): its deadline is set from its timeout (a wait without
-- one waits until signalled or cancelled) and a 'waiting' event is recorded. No task, no
-- message: nothing runs while it waits (docs/design/waits.md).
-- A sleep until a time reads it now, at the step's path of the run input or of the step's
-- input: a string that is not an ISO 8601 timestamp with a time zone, at most 365 days ahead,
-- fails the step and the run naming the path, the value and the rule (returns true); a time
-- already past completes the sleep at once (true); else it is the deadline.
create or replace function switchyard._begin_wait(run uuid, flow text, step text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  st switchyard.steps;
  deadline timestamptz;
  source jsonb;
  v jsonb;
  problem text;
begin
  select * into st from switchyard.steps s where s.flow_slug = flow and s.step_slug = step;
  if st.step_type = 'flow' then
    return switchyard._begin_child(run, flow, step);
  end if;
  if st.step_type = 'wait'
     and exists (select 1 from switchyard.run_signals rs where rs.run_id = run and rs.step_slug = step) then
    perform switchyard._finish_wait(run, flow, step, 'signalled');
    return true;
  end if;
  if st.sleep_until is null then
    deadline := switchyard.clock_now() + make_interval(secs => st.wait_timeout);
  else
    if st.sleep_until_input = 'run' or st.deps_count = 0 then
      select r.input into source from switchyard.runs r where r.run_id = run;
    else
      source := switchyard._dependency_outputs(run, flow, step);
    end if;
    v := source #> st.sleep_until;
    if v is null then
      problem := 'is missing';
    elsif jsonb_typeof(v) <> 'string' then
      problem := format('is a JSON %s (%s), not a string', jsonb_typeof(v), switchyard._clip(v::text));
    -- A date, a time and a zone: PostgreSQL would also read 'now', 'epoch' or a local time.
    elsif (v #>> '{}') !~ '^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(:\d\d(\.\d+)?)?([Zz]|[+-]\d\d(:?\d\d)?)$' then
      problem := format('%s is not an ISO 8601 timestamp with a time zone', switchyard._clip(v #>> '{}'));
    else
      begin
        deadline := (v #>> '{}')::timestamptz;
      -- Any data exception: a bad format (22007), a field out of range (22008), an offset
      -- PostgreSQL refuses (22009: +16:00, +15:60, -1599) although the pattern and
      -- JavaScript's Date accept it.
      exception when data_exception then
        problem := format('%s is not a valid time', switchyard._clip(v #>> '{}'));
      end;
      if problem is null and deadline > switchyard.clock_now() + interval '365 days' then
        problem := format('%s is more than 365 days ahead', switchyard._clip(v #>> '{}'));
      end if;
    end if;
    if problem is not null then
      perform switchyard._fail_run_step(run, step, format(
        'sleep step %s until: the value at %s of the %s input %s: use an ISO 8601 timestamp '
        'with a time zone such as "2026-12-24T09:00:00Z", at most 365 days ahead',
        to_json(step)::text, to_json(array_to_string(st.sleep_until, '.'))::text,
        st.sleep_until_input, problem));
      return true;
    end if;
    if deadline <= switchyard.clock_now() then
      perform switchyard._finish_wait(run, flow, step, 'slept');
      return true;
    end if;
  end if;
  update switchyard.step_states ss
     set wait_deadline = deadline, wait_due = deadline, remaining_tasks = 0
   where ss.run_id = run and ss.step_slug = step;
  perform switchyard._wait_event(run, flow, step, 'waiting');
  return false;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/_check_user_signal_step.sql

-- A user_signal_steps row's payload_schema must be one _payload_problem can check
-- (_payload_schema_problem): refused with the problem (22023 payload_schema_invalid), so a typo
-- in a keyword never leaves a step open to any payload while it looks checked.
create or replace function switchyard._check_user_signal_step()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  problem text;
begin
  if new.payload_schema is not null then
    problem := switchyard._payload_schema_problem(new.payload_schema);
    if problem is not null then
      perform switchyard._refuse('22023', 'payload_schema_invalid', 'payload_schema',
        new.payload_schema::text, format(
        'user_signal_steps (%s, %s): the payload schema is invalid: %s',
        to_json(new.alias)::text, to_json(new.step_slug)::text, problem),
        context => jsonb_build_object('problem', problem));
    end if;
  end if;
  return new;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/_finish_wait.sql

-- Ends a started wait or sleep step (docs/design/waits.md) without starting anything:
--   - 'signalled': its kept signal is marked delivered and its payload becomes the output;
--   - 'slept': a sleep's time is up, its output is null;
--   - 'timed out': a wait's timeout, as its on_timeout says: 'skip' skips the step (its
--     dependents run without its output), 'fail' fails the step and the run.
-- The caller holds the run's row lock, and starts the ready steps after (_start_ready_steps
-- when it is not that function itself) and completes the run when none is left.
create or replace function switchyard._finish_wait(run uuid, flow text, step text, outcome text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  st switchyard.steps;
  signal_payload jsonb;
begin
  select * into st from switchyard.steps s where s.flow_slug = flow and s.step_slug = step;
  if outcome = 'signalled' then
    update switchyard.run_signals rs set delivered_at = switchyard.clock_now()
     where rs.run_id = run and rs.step_slug = step
    returning rs.payload into signal_payload;
    perform switchyard._wait_event(run, flow, step, 'signalled');
    perform switchyard._complete_without_tasks(run, flow, step, signal_payload);
  elsif outcome = 'slept' then
    perform switchyard._complete_without_tasks(run, flow, step, 'null');
  elsif st.on_timeout = 'skip' then
    perform switchyard._wait_event(run, flow, step, 'timed out');
    perform switchyard._skip_step(run, flow, step, format(
      'wait timed out: no signal within %s seconds (onTimeout skip)', st.wait_timeout), false);
  else
    perform switchyard._wait_event(run, flow, step, 'timed out');
    perform switchyard._fail_run_step(run, step, format(
      'wait step %s timed out: no signal within %s seconds (onTimeout fail); signal it with '
      'switchyard.signal_run before its timeout, or give it onTimeout ''skip''',
      to_json(step)::text, st.wait_timeout));
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/expire_waits.sql

-- Begins the delayed starts that are due (start_flow_at), then ends the wait and sleep steps
-- whose time is up (docs/design/waits.md), oldest first, at most max_steps of each: a
-- delayed run's ready steps start; a sleep completes, a wait times out as its onTimeout
-- says ('fail' fails the run, 'skip' skips the step), and the ready steps after them start.
-- The SQL core's own clock: keep_alive runs it on every tick (pg_cron, docs/design/versions.md), so
-- waits end
-- with no worker alive; call it from any scheduler, or a test. A run another transaction
-- holds (a signal being sent) is left for the next call. Each run is worked on in a
-- subtransaction of its own: an error no rule foresaw fails that run alone
-- (_fail_run_unforeseen) and the call goes on with the next; a deadlock or a cancel (40xxx,
-- 57xxx) leaves it for the next call. Returns the number of runs begun and steps ended.
create or replace function switchyard.expire_waits(max_steps int default 1000)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  delayed record;
  due record;
  ended int := 0;
  step_type text;
  err_state text;
  err_message text;
begin
  if max_steps is null or max_steps < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'max_steps', max_steps::text, format(
      'expire_waits: max_steps %s is invalid: use an integer of at least 1',
      coalesce(max_steps::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  -- Delayed starts that are due (start_flow_at): their first steps start now.
  for delayed in
    select d.run_id from switchyard.delayed_starts d
     where d.start_at <= switchyard.clock_now()
     order by d.start_at
     limit max_steps
  loop
    begin
      perform 1 from switchyard.runs r
       where r.run_id = delayed.run_id for update skip locked;
      continue when not found;
      delete from switchyard.delayed_starts d where d.run_id = delayed.run_id;
      continue when not found;
      if exists (select 1 from switchyard.runs r where r.run_id = delayed.run_id and r.status = 'started') then
        perform switchyard._start_ready_steps(delayed.run_id);
        ended := ended + 1;
      end if;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        continue;
      end if;
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        if switchyard._fail_run_unforeseen(delayed.run_id, 'its delayed start could not begin',
                                           err_state, err_message) then
          delete from switchyard.delayed_starts d where d.run_id = delayed.run_id;
          ended := ended + 1;
        end if;
      exception when others then
        raise warning 'switchyard.expire_waits: run %: % (%); left for the next tick',
          delayed.run_id, sqlerrm, sqlstate;
      end;
    end;
  end loop;
  for due in
    -- Of started runs only: a run another step failed keeps its waiting step 'started' (a
    -- retry goes on with it), and such steps must not fill the limit.
    select ss.run_id, ss.flow_slug, ss.step_slug
      from switchyard.step_states ss
      join switchyard.runs r on r.run_id = ss.run_id and r.status = 'started'
     where ss.status = 'started' and ss.wait_due is not null and ss.wait_due <= switchyard.clock_now()
     order by ss.wait_due
     limit max_steps
  loop
    begin
      perform 1 from switchyard.runs r
       where r.run_id = due.run_id and r.status = 'started'
         for update skip locked;
      continue when not found;
      -- Still due once the run is held: a signal may have ended it meanwhile.
      select st.step_type into step_type
        from switchyard.step_states ss
        join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
       where ss.run_id = due.run_id and ss.step_slug = due.step_slug and ss.status = 'started'
         and ss.wait_due <= switchyard.clock_now();
      continue when not found;
      perform switchyard._finish_wait(due.run_id, due.flow_slug, due.step_slug,
                                      case when step_type = 'sleep' then 'slept' else 'timed out' end);
      if exists (select 1 from switchyard.runs r where r.run_id = due.run_id and r.status = 'started') then
        perform switchyard._start_ready_steps(due.run_id);
        perform switchyard._complete_run_if_done(due.run_id);
      end if;
      ended := ended + 1;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        continue;
      end if;
      get stacked diagnostics err_state = returned_sqlstate, err_message = message_text;
      begin
        if switchyard._fail_run_unforeseen(
             due.run_id, format('step %s could not end its wait or start what follows it',
                                to_json(due.step_slug)::text),
             err_state, err_message) then
          ended := ended + 1;
        end if;
      exception when others then
        raise warning 'switchyard.expire_waits: run %: % (%); left for the next tick',
          due.run_id, sqlerrm, sqlstate;
      end;
    end;
  end loop;
  return ended;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/signal_run.sql

-- Signals a wait step of a run (docs/design/waits.md): the payload becomes the step's
-- output. Callable inside the application's own transaction (a trigger on its table, say):
-- the signal exists only once that transaction commits. Holding the run's row lock:
--   - the step waits: the signal is delivered now, its dependents start ('delivered');
--   - the step is not ready yet: the signal is kept and delivered when it is ('kept');
--   - the step already has a signal with this key: nothing changes ('duplicate').
-- Refused, changing nothing: an unknown run or step, a step that is not a wait step
-- (22023), an empty key or one over 200 characters, as a start key (22023 key_empty,
-- key_length), a payload over max_output_bytes (22023), a run that is not started, a step that
-- already has a signal under another key or none, a wait that ended without one or whose
-- timeout is due (55000). The timeout is compared with clock_now(), this transaction's start.
create or replace function switchyard.signal_run(
  run_id uuid, step_slug text, payload jsonb, key text default null
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  run switchyard.runs;
  st switchyard.steps;
  state switchyard.step_states;
  kept switchyard.run_signals;
  value jsonb := coalesce(payload, 'null');
  problem jsonb;
  timed_out boolean;
begin
  select * into run from switchyard.runs r where r.run_id = signal_run.run_id for update;
  if not found then
    perform switchyard._refuse('22023', 'run_unknown', 'run_id', signal_run.run_id::text, format(
      'signal_run: run %s does not exist', coalesce(signal_run.run_id::text, 'null')));
  end if;
  select * into st from switchyard.steps s
   where s.flow_slug = run.flow_slug and s.step_slug = signal_run.step_slug;
  if not found or st.step_type <> 'wait' then
    perform switchyard._refuse('22023',
      case when st.step_slug is null then 'step_unknown' else 'step_not_wait' end, 'step_slug',
      signal_run.step_slug, format(
      'signal_run: step %s of run %s (flow %s) %s; signal one of its wait steps: %s',
      switchyard._clip(signal_run.step_slug), run.run_id, to_json(run.flow_slug)::text,
      case when st.step_slug is null then 'does not exist'
           else format('is a %s step, not a wait step', st.step_type) end,
      coalesce((select string_agg(to_json(w.step_slug)::text, ', ' order by w.step_index)
                  from switchyard.steps w
                 where w.flow_slug = run.flow_slug and w.step_type = 'wait'), 'none')),
      context => jsonb_build_object('step_type', st.step_type, 'run_id', run.run_id,
        'flow_slug', run.flow_slug));
  end if;
  if key is not null and btrim(key) = '' then
    perform switchyard._refuse('22023', 'key_empty', 'key', key, format(
      'signal_run: key %s is invalid: pass null or a non-empty string', switchyard._clip(key)),
      context => jsonb_build_object('run_id', run.run_id, 'step_slug', st.step_slug));
  end if;
  if char_length(key) > 200 then
    perform switchyard._refuse('22023', 'key_length', 'key', key, format(
      'signal_run: key %s is %s characters long, over the limit of 200: use a key of 1 to 200 '
      'characters', switchyard._clip(key), char_length(key)),
      context => jsonb_build_object('size', char_length(key), 'limit', 200, 'run_id', run.run_id,
        'step_slug', st.step_slug));
  end if;
  problem := switchyard._json_size_problem(value, 'max_output_bytes');
  if problem is not null then
    perform switchyard._refuse('22023', 'max_output_bytes', 'payload', problem ->> 'excerpt',
      format(
      'signal_run: the payload for step %s of run %s is %s bytes of JSON, over the limit of %s '
      'bytes (setting max_output_bytes)',
      to_json(st.step_slug)::text, run.run_id, problem ->> 'size', problem ->> 'limit'),
      context => jsonb_build_object('size', (problem ->> 'size')::bigint,
        'limit', (problem ->> 'limit')::int, 'run_id', run.run_id, 'step_slug', st.step_slug),
      hint => 'send a smaller payload (store large data elsewhere and send a reference), or '
             'raise the limit: select switchyard.set_setting(''max_output_bytes'', ''<bytes>'')');
  end if;
  select * into kept from switchyard.run_signals rs
   where rs.run_id = run.run_id and rs.step_slug = st.step_slug;
  if found and key is not null and kept.signal_key = key then
    return 'duplicate';
  end if;
  if run.status <> 'started' then
    perform switchyard._refuse('55000', 'run_not_started', 'run_id', run.run_id::text, format(
      'signal_run: run %s is %s; only a started run can be signalled', run.run_id, run.status),
      context => jsonb_build_object('status', run.status, 'step_slug', st.step_slug));
  end if;
  if kept.run_id is not null then
    perform switchyard._refuse('55000', 'step_already_signalled', 'key', key, format(
      'signal_run: step %s of run %s already has a signal (%s, at %s); a wait step takes one '
      'signal: repeat it with the same key to make the repeat a no-op',
      to_json(st.step_slug)::text, run.run_id,
      case when kept.signal_key is null then 'no key'
           else format('key %s', switchyard._clip(kept.signal_key)) end,
      kept.signalled_at),
      context => jsonb_build_object('signal_key', left(kept.signal_key, 200), 'run_id', run.run_id,
        'step_slug', st.step_slug));
  end if;
  select * into state from switchyard.step_states ss
   where ss.run_id = run.run_id and ss.step_slug = st.step_slug;
  timed_out := coalesce(state.wait_deadline <= switchyard.clock_now() and state.status <> 'created', false);
  if state.status not in ('created', 'started') or timed_out then
    perform switchyard._refuse('55000',
      case when timed_out then 'wait_timed_out' else 'wait_not_open' end, 'step_slug',
      st.step_slug, format(
      'signal_run: wait step %s of run %s %s', to_json(st.step_slug)::text, run.run_id,
      case when timed_out
           then format('timed out at %s (timeout %s seconds, onTimeout %s)', state.wait_deadline,
                       st.wait_timeout, st.on_timeout)
           else format('is %s; only a step that waits or is not ready yet takes a signal',
                       state.status) end),
      context => jsonb_build_object('status', state.status, 'deadline', state.wait_deadline,
        'run_id', run.run_id));
  end if;
  insert into switchyard.run_signals (run_id, step_slug, signal_key, payload)
  values (run.run_id, st.step_slug, key, value);
  -- The counter of signals (docs/design/observability.md#counters-histograms-and-levels), by
  -- outcome.
  perform switchyard._count_metrics(array['signals'], null, array[run.flow_slug], array[st.step_slug],
    array[case when state.status = 'created' then 'kept' else 'delivered' end]);
  if state.status = 'created' then
    return 'kept';
  end if;
  perform switchyard._finish_wait(run.run_id, run.flow_slug, st.step_slug, 'signalled');
  perform switchyard._start_ready_steps(run.run_id);
  perform switchyard._complete_run_if_done(run.run_id);
  return 'delivered';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/waits/signal_user_run.sql

-- Signals a wait step of a run from a browser (docs/design/client.md): what signal_run does,
-- for a signed-in user (auth.uid()) and only in a run they own (runs.owner), and only for a
-- step an operator listed for the run's alias in user_signal_steps. Refused with 42501 (PostgREST
-- answers 403), changing nothing: no signed-in user (not_signed_in); a run that does not exist
-- or is not theirs, alike so that another user's run ids are not revealed (run_not_owned); a
-- step not listed (step_not_allowed). A payload that does not match the step's declared
-- payload_schema is refused with 22023 payload_invalid (PostgREST answers 400), naming the path
-- and the rule. Then signal_run's own refusals and outcomes apply
-- ('delivered', 'kept', 'duplicate'). Granted to no one: the operator grants EXECUTE to
-- authenticated (the opt-in).
create or replace function switchyard.signal_user_run(
  run_id uuid, step_slug text, payload jsonb, key text default null
)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  user_id uuid;
  run_flow text;
  run_alias text;
  schema jsonb;
  problem text;
begin
  if to_regprocedure('auth.uid()') is not null then
    execute 'select auth.uid()' into user_id;
  end if;
  if user_id is null then
    perform switchyard._refuse('42501', 'not_signed_in', 'run_id', signal_user_run.run_id::text,
      format(
      'signal_user_run(%s, %s): no signed-in user (auth.uid() is null): sign in, or signal '
      'from a trusted server with signal_run', coalesce(signal_user_run.run_id::text, 'null'),
      switchyard._clip(signal_user_run.step_slug)));
  end if;
  select r.flow_slug into run_flow from switchyard.runs r
   where r.run_id = signal_user_run.run_id and r.owner = user_id;
  if not found then
    perform switchyard._refuse('42501', 'run_not_owned', 'run_id', signal_user_run.run_id::text,
      format(
      'signal_user_run(%s, %s): run %s is not one of your runs: a signed-in user signals only '
      'runs whose owner they are (runs.owner = auth.uid())',
      coalesce(signal_user_run.run_id::text, 'null'), switchyard._clip(signal_user_run.step_slug),
      coalesce(signal_user_run.run_id::text, 'null')));
  end if;
  select m.alias into run_alias from switchyard.alias_members m where m.flow_slug = run_flow;
  select u.payload_schema into schema from switchyard.user_signal_steps u
   where u.alias = coalesce(run_alias, run_flow) and u.step_slug = signal_user_run.step_slug;
  if not found then
    perform switchyard._refuse('42501', 'step_not_allowed', 'step_slug', signal_user_run.step_slug,
      format(
      'signal_user_run(%s, %s): signed-in users may not signal step %s of alias %s: an '
      'operator allows it with insert into switchyard.user_signal_steps (alias, step_slug)',
      signal_user_run.run_id, switchyard._clip(signal_user_run.step_slug),
      switchyard._clip(signal_user_run.step_slug), to_json(coalesce(run_alias, run_flow))::text),
      context => jsonb_build_object('alias', coalesce(run_alias, run_flow)));
  end if;
  -- The payload a browser sends is checked against what the operator declared for the step,
  -- before signal_run keeps it (a refused payload uses up nothing).
  if schema is not null then
    problem := switchyard._payload_problem(coalesce(payload, 'null'), schema, 'payload');
    if problem is not null then
      perform switchyard._refuse('22023', 'payload_invalid', 'payload',
        switchyard._clip(coalesce(payload, 'null')::text, 200), format(
        'signal_user_run(%s, %s): %s (the payload_schema of step %s of alias %s)',
        signal_user_run.run_id, switchyard._clip(signal_user_run.step_slug), problem,
        to_json(signal_user_run.step_slug)::text, to_json(coalesce(run_alias, run_flow))::text),
        context => jsonb_build_object('problem', problem, 'run_id', signal_user_run.run_id,
          'step_slug', signal_user_run.step_slug));
    end if;
  end if;
  return switchyard.signal_run(signal_user_run.run_id, signal_user_run.step_slug, payload, key);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flow_control/_flow_control.sql

-- Flow control in the claim (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): for
-- the eligible messages of a batch
-- whose steps have a rate limit or a keyed concurrency, in message order, whether each may start
-- now (wait_seconds null; slot: the concurrency slot it takes, or null) or waits (wait_seconds:
-- when it may run: the next tokens of its limit, at most 5 s so that a limit the operator
-- raises takes effect by the message's next claim; or 1 s for a full concurrency key, whose
-- slot frees when a started task of the key ends). Messages of steps without flow control are not
-- returned. Called by start_tasks with the batch's tasks locked; it takes the concurrency keys'
-- advisory locks (sorted), then the rate limits' rows (sorted), so two claims cannot deadlock and
-- a key's started tasks are counted after the claim before this one committed. The tokens taken
-- are written here; a task waiting takes none.
create or replace function switchyard._flow_control(queue text, ids bigint[])
returns table (message_id bigint, wait_seconds int, slot text)
language plpgsql
volatile
set search_path = ''
as $$
declare
  t record;
  lim record;
  m_ids bigint[] := '{}';
  m_slots text[] := '{}';
  m_limits int[] := '{}';
  m_rates text[] := '{}';
  m_costs int[] := '{}';
  granted text[] := '{}';
  key text;
  used bigint;
  per_second double precision;
  avail double precision;
  wait int;
begin
  for t in
    select x.message_id, x.run_id, x.flow_slug, x.step_slug, x.task_index, st.rate_limit,
           st.rate_cost, st.concurrency_limit
      from (select distinct u.id from unnest(ids) as u(id)) b
      cross join lateral (select y.message_id, y.run_id, y.flow_slug, y.step_slug, y.task_index
                            from switchyard.step_tasks y
                           where y.queue_name = queue and y.message_id = b.id
                           limit 1) x
      join switchyard.steps st on st.flow_slug = x.flow_slug and st.step_slug = x.step_slug
     where st.rate_limit is not null or st.concurrency_limit is not null
     order by x.message_id
  loop
    key := switchyard._concurrency_key(t.run_id, t.flow_slug, t.step_slug, t.task_index);
    m_ids := m_ids || t.message_id;
    m_slots := m_slots || key;
    m_limits := m_limits || t.concurrency_limit;
    m_rates := m_rates || t.rate_limit;
    m_costs := m_costs || t.rate_cost;
  end loop;
  if cardinality(m_ids) = 0 then
    return;
  end if;

  perform pg_advisory_xact_lock(hashtextextended('switchyard.concurrency:' || k.slot, 0))
     from (select distinct s.slot from unnest(m_slots) as s(slot)
            where s.slot is not null order by s.slot) k;
  perform 1 from switchyard.rate_limits l
    where l.name = any (m_rates)
    order by l.name
      for update;

  for i in 1 .. cardinality(m_ids) loop
    wait := null;
    if m_slots[i] is not null then
      -- Started tasks holding the key (committed; the lock above orders the claims), and the
      -- ones this batch gave it.
      select count(*) into used from switchyard.step_tasks y
       where y.concurrency_key = m_slots[i] and y.status = 'started';
      used := used + (select count(*) from unnest(granted) g where g = m_slots[i]);
      if used >= m_limits[i] then
        wait := 1;
      end if;
    end if;
    if wait is null and m_rates[i] is not null then
      select l.rate, l.per_seconds, l.burst, l.tokens, l.refilled_at into lim
        from switchyard.rate_limits l where l.name = m_rates[i];
      if found then
        per_second := lim.rate::double precision / lim.per_seconds;
        avail := least(greatest(lim.burst, m_costs[i]),
                       lim.tokens + greatest(0, extract(epoch from switchyard.clock_now() - lim.refilled_at))
                                    * per_second);
        if avail >= m_costs[i] then
          update switchyard.rate_limits l
             set tokens = avail - m_costs[i], refilled_at = greatest(l.refilled_at, switchyard.clock_now())
           where l.name = m_rates[i];
        else
          wait := least(5, greatest(1, ceil(
            greatest(0, extract(epoch from lim.refilled_at - switchyard.clock_now()))
            + (m_costs[i] - avail) / per_second)))::int;
        end if;
      end if;
    end if;
    if wait is null and m_slots[i] is not null then
      granted := granted || m_slots[i];
    end if;
    message_id := m_ids[i];
    wait_seconds := wait;
    slot := m_slots[i];
    return next;
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flow_control/rate_limit_status.sql

-- The rate limits for operators and the dashboard
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): each limit
-- with its tokens now, and the steps (flow/step) that name it; a name steps use without a row
-- (no limit) is listed with null rate.
create or replace function switchyard.rate_limit_status()
returns table (
  name text, rate int, per_seconds int, burst int, tokens double precision,
  updated_at timestamptz, steps text[]
)
language sql
stable
security definer
set search_path = ''
as $$
  select n.name, l.rate, l.per_seconds, l.burst,
         case when l.name is not null then
           case when l.refilled_at > switchyard.clock_now() then l.tokens
                else least(l.burst, l.tokens + extract(epoch from switchyard.clock_now() - l.refilled_at)
                                          * l.rate::double precision / l.per_seconds) end end,
         l.updated_at,
         coalesce((select array_agg(s.flow_slug || '/' || s.step_slug
                                    order by s.flow_slug, s.step_slug)
                     from switchyard.steps s where s.rate_limit = n.name), '{}')
    from (select r.name from switchyard.rate_limits r
          union
          select s.rate_limit from switchyard.steps s where s.rate_limit is not null) n
    left join switchyard.rate_limits l on l.name = n.name
   order by n.name
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/flow_control/set_rate_limit.sql

-- Creates or changes a rate limit shared by name
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): rate tokens per
-- per_seconds, at most burst (default: rate) saved up. Live: the next claim uses it. A changed
-- limit keeps the tokens it had (refilled at the old rate up to now), at most the new burst; a
-- new one starts full. It also lifts a RetryAfter's drain (fail_task_with): the bucket refills
-- from now at the new rate, so the operator's word is the latest. Returns the limit as JSON.
create or replace function switchyard.set_rate_limit(
  name text, rate int, per_seconds int default 1, burst int default null
)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  cap int := coalesce(burst, rate);
  result jsonb;
begin
  if name is null or name !~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$' then
    perform switchyard._refuse('22023', 'rate_limit_name', 'name', name, format(
      'set_rate_limit: name %s is invalid: use a letter or digit, then letters, digits, _ . : '
      'or - (at most 100)', coalesce(to_json(left(name, 200))::text, 'null')));
  end if;
  if rate is null or rate not between 1 and 1000000 then
    perform switchyard._refuse('22023', 'integer_range', 'rate', rate::text, format(
      'set_rate_limit: rate %s is out of range: use 1 to 1000000 tokens per period',
      coalesce(rate::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 1000000));
  end if;
  if per_seconds is null or per_seconds not between 1 and 86400 then
    perform switchyard._refuse('22023', 'integer_range', 'per_seconds', per_seconds::text, format(
      'set_rate_limit: per_seconds %s is out of range: use 1 to 86400',
      coalesce(per_seconds::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 86400));
  end if;
  if cap not between 1 and 1000000 then
    perform switchyard._refuse('22023', 'integer_range', 'burst', cap::text, format(
      'set_rate_limit: burst %s is out of range: use 1 to 1000000', cap),
      context => jsonb_build_object('min', 1, 'max', 1000000));
  end if;
  insert into switchyard.rate_limits as l (name, rate, per_seconds, burst, tokens)
  values (set_rate_limit.name, set_rate_limit.rate, set_rate_limit.per_seconds, cap, cap)
  on conflict on constraint rate_limits_pkey do update
     set tokens = least(excluded.burst,
                        l.tokens + greatest(0, extract(epoch from switchyard.clock_now() - l.refilled_at))
                                   * l.rate::double precision / l.per_seconds),
         refilled_at = switchyard.clock_now(),
         rate = excluded.rate, per_seconds = excluded.per_seconds, burst = excluded.burst,
         updated_at = switchyard.clock_now()
  returning jsonb_build_object('name', l.name, 'rate', l.rate, 'per_seconds', l.per_seconds,
                               'burst', l.burst, 'tokens', l.tokens)
    into result;
  return result;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/_cron_parse.sql

-- A cron expression (five fields: minute hour day-of-month month day-of-week) as the sets it
-- allows: {"minute": [...], "hour": [...], "dom": [...], "month": [...], "dow": [...],
-- "dom_star", "dow_star"}. A field is *, a value, a range a-b, a step */n or a-b/n, or a list
-- of those separated by commas; months may be jan-dec, days of the week sun-sat, and 7 is
-- Sunday as 0 is. When both day fields are restricted, a day matches either (as cron does).
-- An invalid expression is refused with the field, the part and the rule (22023 cron_invalid);
-- one over 1000 characters before it is read (22023 cron_too_long: every field listed value by
-- value takes under 400).
create or replace function switchyard._cron_parse(expr text)
returns jsonb
language plpgsql
immutable
set search_path = ''
as $$
declare
  fields text[] := regexp_split_to_array(trim(coalesce(expr, '')), '\s+');
  names constant text[] := array['minute', 'hour', 'day of month', 'month', 'day of week'];
  keys constant text[] := array['minute', 'hour', 'dom', 'month', 'dow'];
  lows constant int[] := array[0, 0, 1, 1, 0];
  highs constant int[] := array[59, 23, 31, 12, 7];
  months constant text[] := array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep',
                                  'oct', 'nov', 'dec'];
  days constant text[] := array['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
  result jsonb := '{}';
  part text;
  m text[];
  lo int;
  hi int;
  step int;
  val int;
  allowed int[];
  problem text;
  f int;
begin
  if length(expr) > 1000 then
    perform switchyard._refuse('22023', 'cron_too_long', 'cron', expr, format(
      'cron expression %s... is %s characters, over the limit of 1000: use ranges and steps '
      '(0-30/5) instead of long lists', to_json(left(expr, 60))::text, length(expr)),
      context => jsonb_build_object('size', length(expr), 'limit', 1000));
  end if;
  if array_length(fields, 1) is distinct from 5 or fields[1] = '' then
    problem := format('it has %s fields, cron needs five (minute hour day-of-month month '
                      'day-of-week), e.g. ''0 3 * * *''',
                      case when fields[1] = '' then 0 else array_length(fields, 1) end);
  end if;
  f := 1;
  while problem is null and f <= 5 loop
    allowed := '{}';
    foreach part in array string_to_array(lower(fields[f]), ',') loop
      m := regexp_match(part, '^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/([0-9]+))?$');
      if m is null then
        problem := format('%s field part %s is not a value, a range a-b, * or a step /n',
                          names[f], to_json(part)::text);
        exit;
      end if;
      if length(m[3]) > 4 then
        problem := format('%s field part %s: step %s is out of range 1-%s', names[f],
                          to_json(part)::text, left(m[3], 20), highs[f]);
        exit;
      end if;
      step := coalesce(m[3]::int, 1);
      if step < 1 then
        problem := format('%s field part %s has step 0', names[f], to_json(part)::text);
        exit;
      end if;
      if m[1] = '*' then
        if m[2] is not null then
          problem := format('%s field part %s: * takes no range', names[f], to_json(part)::text);
          exit;
        end if;
        lo := lows[f];
        hi := case when f = 5 then 6 else highs[f] end;
      else
        for i in 1..2 loop
          continue when m[i] is null;
          if m[i] ~ '^[0-9]+$' and length(m[i]) <= 4 then
            val := m[i]::int;
          elsif f = 4 and array_position(months, m[i]) is not null then
            val := array_position(months, m[i]);
          elsif f = 5 and array_position(days, m[i]) is not null then
            val := array_position(days, m[i]) - 1;
          else
            problem := format('%s field part %s: %s is not a %s', names[f], to_json(part)::text,
                              to_json(m[i])::text, names[f]);
            exit;
          end if;
          if val < lows[f] or val > highs[f] then
            problem := format('%s field part %s: %s is out of range %s-%s', names[f],
                              to_json(part)::text, val, lows[f], highs[f]);
            exit;
          end if;
          if i = 1 then lo := val; else hi := val; end if;
        end loop;
        exit when problem is not null;
        if m[2] is null then
          hi := case when m[3] is null then lo else highs[f] end;
        end if;
        if hi < lo then
          problem := format('%s field part %s: the range runs backwards', names[f],
                            to_json(part)::text);
          exit;
        end if;
      end if;
      allowed := allowed || array(select g from generate_series(lo, hi, step) g);
    end loop;
    if problem is null then
      if f = 5 then
        allowed := array(select case when v = 7 then 0 else v end from unnest(allowed) v);
      end if;
      result := result || jsonb_build_object(keys[f],
        (select jsonb_agg(distinct v order by v) from unnest(allowed) v));
    end if;
    f := f + 1;
  end loop;
  if problem is not null then
    perform switchyard._refuse('22023', 'cron_invalid', 'cron', expr, format(
      'cron expression %s is invalid: %s', to_json(left(coalesce(expr, ''), 200))::text, problem));
  end if;
  return result || jsonb_build_object('dom_star', fields[3] like '*%',
                                      'dow_star', fields[5] like '*%');
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/_refuse_unknown_schedule.sql

-- Raises the refusal of a schedule name that names no schedule (22023 schedule_unknown).
create or replace function switchyard._refuse_unknown_schedule(name text)
returns void
language plpgsql
immutable
set search_path = ''
as $$
begin
  perform switchyard._refuse('22023', 'schedule_unknown', 'name', name, format(
    'unknown schedule %s', coalesce(switchyard._clip(name), 'null')));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/_schedule_json.sql

-- A schedule as the API answers it: its fields, its next tick, and its latest tick's run.
create or replace function switchyard._schedule_json(schedule_name text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
declare
  s switchyard.schedules;
  spec jsonb;
  from_at timestamptz;
  horizon timestamptz;
  day date;
  next_at timestamptz;
  last jsonb;
begin
  select * into s from switchyard.schedules x where x.name = schedule_name;
  if not found then
    return null;
  end if;
  -- The next tick, at most 366 days ahead. _cron_ticks scans every local day of its window (a
  -- year of days cost up to a second per schedule, and the dashboard lists them every few
  -- seconds), so the expression is parsed once here to find the days whose month and day
  -- fields match (the day rule of _cron_ticks), and _cron_ticks is asked only about the first
  -- of them that has a tick left (today's may all be past), about that day (a time in a
  -- daylight-saving gap falls later, possibly past midnight).
  spec := switchyard._cron_parse(s.cron);
  from_at := greatest(switchyard.clock_now(), s.checked_until);
  horizon := from_at + interval '366 days';
  for day in
    select d.day::date
      from generate_series(((from_at at time zone s.time_zone)::date)::timestamp,
                           ((horizon at time zone s.time_zone)::date)::timestamp,
                           interval '1 day') as d(day)
     where (spec -> 'month') @> to_jsonb(extract(month from d.day)::int)
       and case
             when (spec ->> 'dom_star')::boolean and (spec ->> 'dow_star')::boolean then true
             when (spec ->> 'dom_star')::boolean then
               (spec -> 'dow') @> to_jsonb(extract(dow from d.day)::int)
             when (spec ->> 'dow_star')::boolean then
               (spec -> 'dom') @> to_jsonb(extract(day from d.day)::int)
             else (spec -> 'dow') @> to_jsonb(extract(dow from d.day)::int)
               or (spec -> 'dom') @> to_jsonb(extract(day from d.day)::int)
           end
     order by d.day
  loop
    select min(t) into next_at
      from switchyard._cron_ticks(
             s.cron, s.time_zone,
             greatest(from_at, (day::timestamp at time zone s.time_zone) - interval '1 second'),
             least(horizon, ((day + 1)::timestamp at time zone s.time_zone) + interval '3 hours'),
             1) t;
    exit when next_at is not null;
  end loop;
  select jsonb_build_object('tick_at', st.tick_at, 'outcome', st.outcome, 'run_id', st.run_id,
                            'run_status', r.status, 'error', st.error)
    into last
    from switchyard.schedule_ticks st
    left join switchyard.runs r on r.run_id = st.run_id
   where st.schedule_name = s.name
   order by st.tick_at desc
   limit 1;
  return jsonb_build_object(
    'name', s.name, 'alias', s.alias, 'cron', s.cron, 'time_zone', s.time_zone,
    'input', s.input, 'overlap', s.overlap, 'catch_up', s.catch_up,
    'catch_up_limit', s.catch_up_limit, 'enabled', s.enabled, 'next_tick_at', next_at,
    'checked_until', s.checked_until, 'last_tick', last, 'missed_ticks', s.missed_ticks,
    'skipped_ticks', s.skipped_ticks, 'created_at', s.created_at, 'updated_at', s.updated_at);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/_schedule_problem.sql

-- Checks a schedule's fields and raises the first refusal (22023, rule named): the name, the
-- cron expression, the time zone, the target alias (it must resolve now), the input (JSON, at
-- most max_input_bytes), the overlap and catch-up policies and the catch-up bound. A time zone
-- is 'UTC' or an IANA region name (Area/Location, e.g. 'Europe/Berlin',
-- 'America/Argentina/Buenos_Aires'; 'Etc/UTC') that PostgreSQL knows: PostgreSQL also takes a
-- POSIX rule ('UTC+5', which POSIX reads as five hours *west* of UTC), abbreviations ('EST',
-- 'CET') and 'Etc/GMT+5' (also west), whose meaning a reader gets wrong, so they are refused.
create or replace function switchyard._schedule_problem(
  name text, alias text, cron text, time_zone text, input jsonb, overlap text, catch_up text,
  catch_up_limit int
)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  too_big jsonb;
begin
  if name is null or name !~ '^[a-z][a-z0-9_-]{0,62}$' then
    perform switchyard._refuse('22023', 'schedule_name_invalid', 'name', name, format(
      'schedule name %s is invalid: 1-63 characters, lower-case letters, digits, _ and -, '
      'starting with a letter', coalesce(switchyard._clip(name), 'null')));
  end if;
  perform switchyard._cron_parse(cron);
  if time_zone is null then
    perform switchyard._refuse('22023', 'time_zone_unknown', 'time_zone', null,
      'time zone is null: use an IANA region name such as ''Europe/Berlin'', or ''UTC''');
  end if;
  if time_zone not in ('UTC', 'Etc/UTC')
     and time_zone !~ ('^(Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian'
                       '|Pacific)(/[A-Z][A-Za-z0-9_+-]{1,30}){1,2}$') then
    perform switchyard._refuse('22023', 'time_zone_unknown', 'time_zone', time_zone, format(
      'time zone %s is not a region name: a POSIX rule, an offset or an abbreviation misleads '
      '(POSIX reads UTC+5 as 5 hours west of UTC); use an IANA region name such as '
      '''Europe/Berlin'', or ''UTC''', switchyard._clip(time_zone)));
  end if;
  begin
    perform switchyard.clock_now() at time zone time_zone;
  exception when others then
    perform switchyard._refuse('22023', 'time_zone_unknown', 'time_zone', time_zone, format(
      'time zone %s is unknown: use an IANA region name such as ''Europe/Berlin'', or ''UTC''',
      switchyard._clip(time_zone)));
  end;
  perform switchyard.resolve_flow(alias);
  if input is null then
    perform switchyard._refuse('22023', 'input_null', 'input', null,
      'schedule input is null: give a JSON value (''{}'' for none)');
  end if;
  too_big := switchyard._json_size_problem(input, 'max_input_bytes');
  if too_big is not null then
    perform switchyard._refuse('22023', 'input_too_large', 'input', too_big ->> 'excerpt', format(
      'schedule input is %s bytes of JSON, over the limit of %s bytes (setting max_input_bytes)',
      too_big ->> 'size', too_big ->> 'limit'),
      context => jsonb_build_object('size', too_big -> 'size', 'limit', too_big -> 'limit'));
  end if;
  if overlap is null or overlap not in ('skip', 'queue', 'cancel_previous') then
    perform switchyard._refuse('22023', 'overlap_invalid', 'overlap', overlap, format(
      'overlap %s is invalid: skip, queue or cancel_previous',
      coalesce(to_json(left(overlap, 200))::text, 'null')));
  end if;
  if catch_up is null or catch_up not in ('none', 'latest', 'all') then
    perform switchyard._refuse('22023', 'catch_up_invalid', 'catch_up', catch_up, format(
      'catch_up %s is invalid: none, latest or all',
      coalesce(to_json(left(catch_up, 200))::text, 'null')));
  end if;
  if catch_up_limit is null or catch_up_limit not between 1 and 1000 then
    perform switchyard._refuse('22023', 'catch_up_limit_range', 'catch_up_limit',
      catch_up_limit::text, format(
      'catch_up_limit %s is out of range 1-1000', coalesce(catch_up_limit::text, 'null')));
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/_start_schedule_run.sql

-- Starts the run of a schedule's tick with its derived id and records the tick (a queued
-- tick's record is updated). A failed start is recorded as 'failed' with its error, inside a
-- subtransaction, so one broken schedule never stops the others. `replaces` (overlap
-- 'cancel_previous') is the open run the tick replaces: it is cancelled in the same
-- subtransaction, first (a singleton start key of the alias is free then), so a start that
-- fails rolls the cancel back and the open run goes on. Returns whether it started.
create or replace function switchyard._start_schedule_run(
  schedule_name text, alias text, input jsonb, tick_at timestamptz, run uuid,
  replaces uuid default null
)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  message text;
begin
  begin
    if replaces is not null then
      perform switchyard.cancel_run(replaces,
        format('schedule %s: replaced by the tick of %s', schedule_name, tick_at));
    end if;
    perform switchyard.start_flow(alias, input, run);
  exception when others then
    get stacked diagnostics message = message_text;
    insert into switchyard.schedule_ticks (schedule_name, tick_at, run_id, outcome, error)
    values (schedule_name, tick_at, run, 'failed', left(message, 1000))
    on conflict on constraint schedule_ticks_pkey do update
      set outcome = 'failed', error = excluded.error, recorded_at = switchyard.clock_now();
    return false;
  end;
  insert into switchyard.schedule_ticks (schedule_name, tick_at, run_id, outcome)
  values (schedule_name, tick_at, run, 'started')
  on conflict on constraint schedule_ticks_pkey do update
    set outcome = 'started', recorded_at = switchyard.clock_now();
  update switchyard.schedules x set last_run_id = run where x.name = schedule_name;
  return true;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/backfill_schedule.sql

-- Starts the runs of a schedule's ticks from `from_at` to `to_at` (both included) on purpose,
-- at most 1000 ticks in at most 366 days per call, each with its tick's derived run id: a tick
-- that already ran is a no-op, so a backfill can be repeated. The overlap policy does not apply
-- (a backfill is an explicit catch-up). Its work is bounded before any run starts: the ticks
-- are found a week at a time and the search stops at the 1001st, so a refusal costs little and
-- the schedule's lock (which run_schedules skips, never waits for) is held briefly. A longer or
-- infinite range, or more ticks, is refused (22023 backfill_too_long) and starts nothing.
-- Returns the number of runs started.
create or replace function switchyard.backfill_schedule(
  name text, from_at timestamptz, to_at timestamptz
)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
  t timestamptz;
  due timestamptz[] := '{}';
  window_from timestamptz;
  window_to timestamptz;
  started int := 0;
begin
  select * into s from switchyard.schedules x where x.name = backfill_schedule.name for update;
  if not found then
    perform switchyard._refuse_unknown_schedule(name);
  end if;
  if from_at is null or to_at is null or to_at < from_at then
    perform switchyard._refuse('22023', 'backfill_range', 'to_at', to_at::text, format(
      'backfill_schedule(%s): the range %s to %s is empty: from_at must be at most to_at',
      to_json(name)::text, coalesce(from_at::text, 'null'), coalesce(to_at::text, 'null')));
  end if;
  if not isfinite(from_at) or not isfinite(to_at)
     or extract(epoch from to_at) - extract(epoch from from_at) > 366 * 86400 then
    perform switchyard._refuse('22023', 'backfill_too_long', 'to_at', to_at::text, format(
      'backfill_schedule(%s): the range %s to %s is longer than 366 days: backfill at most 366 '
      'days per call', to_json(name)::text, from_at, to_at),
      context => jsonb_build_object('max_days', 366));
  end if;
  window_from := from_at - interval '1 microsecond';
  while window_from < to_at and cardinality(due) <= 1000 loop
    window_to := least(to_at, window_from + interval '7 days');
    due := due || array(select switchyard._cron_ticks(s.cron, s.time_zone, window_from,
                                                      window_to, 1001 - cardinality(due)));
    window_from := window_to;
  end loop;
  if cardinality(due) > 1000 then
    perform switchyard._refuse('22023', 'backfill_too_long', 'to_at', to_at::text, format(
      'backfill_schedule(%s): more than 1000 ticks from %s to %s: backfill a shorter range',
      to_json(name)::text, from_at, to_at));
  end if;
  foreach t in array due loop
    if not exists (select 1 from switchyard.schedule_ticks st
                    where st.schedule_name = s.name and st.tick_at = t and st.outcome = 'started')
       and switchyard._start_schedule_run(s.name, s.alias, s.input, t,
                                          switchyard._schedule_run_id(s.name, t)) then
      started := started + 1;
    end if;
  end loop;
  return started;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/create_schedule.sql

-- Creates a schedule (docs/design/schedules.md): from now on every tick of `cron` in
-- `time_zone` starts `alias` with `input`, exactly once. Refuses bad fields with their rule
-- (see _schedule_problem) and an existing name (23505 schedule_exists). Returns the schedule.
create or replace function switchyard.create_schedule(
  name text,
  alias text,
  cron text,
  input jsonb default '{}',
  time_zone text default 'UTC',
  overlap text default 'skip',
  catch_up text default 'latest',
  catch_up_limit int default 10,
  enabled boolean default true
)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
begin
  perform switchyard._schedule_problem(name, alias, cron, time_zone, input, overlap, catch_up,
                                       catch_up_limit);
  insert into switchyard.schedules (name, alias, cron, time_zone, input, overlap, catch_up,
                                    catch_up_limit, enabled, checked_until)
  values (name, alias, cron, time_zone, input, overlap, catch_up, catch_up_limit,
          coalesce(enabled, true), switchyard.clock_now())
  on conflict do nothing;
  if not found then
    perform switchyard._refuse('23505', 'schedule_exists', 'name', name, format(
      'schedule %s exists: change it with update_schedule', to_json(name)::text));
  end if;
  return switchyard._schedule_json(name);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/run_schedules.sql

-- The scheduler's tick (docs/design/schedules.md): for every enabled schedule, the ticks of its
-- cron after the last look and at most `now_at`, chosen by its catch-up policy, fire
-- (_fire_schedule); a queued tick starts when its schedule has no open run. Runs from a pg_cron
-- job (schedule_schedules), from every keep-alive tick, or by hand; `now_at` lets a test drive
-- the clock back, never ahead: at most 60 s past clock_now() (a caller's clock skew), else refused
-- (22023 now_at_range), as are null and infinities. Each schedule is locked while it is looked
-- at, so concurrent ticks start each tick's run once; a schedule another transaction holds (an
-- update, a backfill) is skipped, never waited for: the next tick looks at its due ticks (a
-- 'none' schedule's tick then counts as missed when it is over 60 s late). At most 31 days are
-- looked back; older ticks count as missed. Also removes tick records older than 30 days by the
-- clock that recorded them (clock_now(), whatever `now_at` says), at most 1000 per call. Returns the
-- number of runs started, those of the batches it closed too (close_batches, whose timeout
-- passed by `now_at`; docs/design/batching.md). Each schedule is isolated from the others (an error no rule foresaw
-- is a warning; the schedule is looked at again next tick).
create or replace function switchyard.run_schedules(now_at timestamptz default switchyard.clock_now())
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
  due timestamptz[];
  chosen timestamptz[];
  t timestamptz;
  q record;
  started int := 0;
  from_at timestamptz;
begin
  if now_at is null or not isfinite(now_at)
     or now_at > switchyard.clock_now() + interval '60 seconds' then
    perform switchyard._refuse('22023', 'now_at_range', 'now_at', now_at::text, format(
      'run_schedules: now_at %s is out of range: a test clock may go back, never more than 60 s '
      'ahead of the core''s clock (%s)', coalesce(now_at::text, 'null'), switchyard.clock_now()),
      context => jsonb_build_object('max', (switchyard.clock_now() + interval '60 seconds')::text));
  end if;
  for s in select * from switchyard.schedules x where x.enabled order by x.name
             for update skip locked loop
    -- Each schedule in a subtransaction of its own: an error no rule foresaw (a row that got
    -- past every check) is a warning naming the schedule, which is looked at again next tick;
    -- it never stops another schedule nor the rest of the tick (docs/design/waits.md).
    begin
      from_at := coalesce(s.checked_until, s.created_at);
      if from_at < now_at then
        due := array(select switchyard._cron_ticks(s.cron, s.time_zone,
                                                   greatest(from_at, now_at - interval '31 days'),
                                                   now_at, 100000));
        chosen := case s.catch_up
          when 'all' then due[greatest(1, cardinality(due) - s.catch_up_limit + 1):]
          when 'latest' then due[cardinality(due):]
          else case when cardinality(due) > 0 and now_at - due[cardinality(due)] < interval '60 seconds'
                    then due[cardinality(due):] else '{}' end
        end;
        foreach t in array chosen loop
          if switchyard._fire_schedule(s, t) then
            started := started + 1;
            select * into s from switchyard.schedules x where x.name = s.name;
          end if;
        end loop;
        update switchyard.schedules x
           set checked_until = now_at,
               missed_ticks = x.missed_ticks + cardinality(due) - cardinality(chosen)
         where x.name = s.name;
        select * into s from switchyard.schedules x where x.name = s.name;
      end if;
      -- A queued tick (overlap 'queue') starts once its schedule has no open run, oldest first.
      if not exists (select 1 from switchyard.runs r
                      where r.run_id = s.last_run_id and r.status = 'started') then
        select st.tick_at, st.run_id into q from switchyard.schedule_ticks st
         where st.schedule_name = s.name and st.outcome = 'queued'
         order by st.tick_at limit 1;
        if found and switchyard._start_schedule_run(s.name, s.alias, s.input, q.tick_at, q.run_id)
        then
          started := started + 1;
        end if;
      end if;
    exception when others then
      if sqlstate like '40%' or sqlstate like '57%' then
        raise;
      end if;
      raise warning 'switchyard.run_schedules: schedule %: % (SQLSTATE %); looked at again next tick',
        to_json(s.name)::text, sqlerrm, sqlstate;
    end;
  end loop;
  -- Batches whose timeout passed (docs/design/batching.md), in a subtransaction: a failure
  -- there never undoes the schedules' runs.
  begin
    started := started + switchyard.close_batches(now_at);
  exception when others then
    if sqlstate like '40%' or sqlstate like '57%' then
      raise;
    end if;
    raise warning 'switchyard.run_schedules: close_batches failed: % (SQLSTATE %)', sqlerrm,
      sqlstate;
  end;
  delete from switchyard.schedule_ticks st
   where (st.schedule_name, st.tick_at) in (
     select x.schedule_name, x.tick_at from switchyard.schedule_ticks x
      where x.recorded_at < switchyard.clock_now() - interval '30 days' and x.outcome <> 'queued'
      order by x.recorded_at limit 1000);
  return started;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/schedule_schedules.sql

-- Installs the scheduler's own pg_cron job 'switchyard_schedules' in this database (every minute
-- by default: select switchyard.run_schedules()) and returns its job id. Without it the
-- keep-alive's job ticks the scheduler too; both may run, a tick is never started twice.
create or replace function switchyard.schedule_schedules(cron_schedule text default '* * * * *')
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  perform switchyard._cron_parse(cron_schedule);
  return switchyard._cron_job('schedule_schedules', 'switchyard_schedules', cron_schedule,
    'select switchyard.run_schedules()',
    way_out => 'on Supabase enable pg_cron (Database > Extensions); or call '
               'select switchyard.run_schedules() every minute from elsewhere');
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/unschedule_schedules.sql

-- Removes the pg_cron job 'switchyard_schedules'; returns whether there was one.
create or replace function switchyard.unschedule_schedules()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('unschedule_schedules', 'switchyard_schedules') is not null;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/schedules/update_schedule.sql

-- Changes a schedule: every argument left null keeps its value. The next tick follows the new
-- cron from now on (ticks before now are not run again); `enabled` pauses or resumes it
-- (pause_schedule and resume_schedule call this). Refuses an unknown name
-- (22023 schedule_unknown) and bad fields as create_schedule does. Returns the schedule.
create or replace function switchyard.update_schedule(
  name text,
  alias text default null,
  cron text default null,
  input jsonb default null,
  time_zone text default null,
  overlap text default null,
  catch_up text default null,
  catch_up_limit int default null,
  enabled boolean default null
)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  s switchyard.schedules;
begin
  select * into s from switchyard.schedules x where x.name = update_schedule.name for update;
  if not found then
    perform switchyard._refuse_unknown_schedule(name);
  end if;
  s.alias := coalesce(alias, s.alias);
  s.cron := coalesce(cron, s.cron);
  s.input := coalesce(input, s.input);
  s.time_zone := coalesce(time_zone, s.time_zone);
  s.overlap := coalesce(overlap, s.overlap);
  s.catch_up := coalesce(catch_up, s.catch_up);
  s.catch_up_limit := coalesce(catch_up_limit, s.catch_up_limit);
  -- Fields are checked when one is given: a pause or resume alone (enabled) is never refused,
  -- even when the alias no longer resolves.
  if num_nonnulls(alias, cron, input, time_zone, overlap, catch_up, catch_up_limit) > 0 then
    perform switchyard._schedule_problem(s.name, s.alias, s.cron, s.time_zone, s.input,
                                         s.overlap, s.catch_up, s.catch_up_limit);
  end if;
  update switchyard.schedules x
     set alias = s.alias, cron = s.cron, input = s.input, time_zone = s.time_zone,
         overlap = s.overlap, catch_up = s.catch_up, catch_up_limit = s.catch_up_limit,
         enabled = coalesce(update_schedule.enabled, x.enabled), updated_at = switchyard.clock_now(),
         -- A changed cron or zone applies from now; so does a resume (ticks while paused are
         -- not run later).
         checked_until = case when x.cron is distinct from s.cron
                                or x.time_zone is distinct from s.time_zone
                                or (not x.enabled and coalesce(update_schedule.enabled, false))
                              then greatest(x.checked_until, switchyard.clock_now()) else x.checked_until end
   where x.name = s.name;
  return switchyard._schedule_json(s.name);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/_primary_key_columns.sql

-- The columns of a table's primary key, in the key's order, with their types (format_type):
-- what a row trigger's per-row key and its backfill's cursor are made of. Empty without one.
create or replace function switchyard._primary_key_columns(rel oid)
returns table (column_name text, column_type text)
language sql
stable
set search_path = ''
as $$
  select a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod)
    from pg_catalog.pg_index i
    cross join lateral unnest(i.indkey) with ordinality as k(attnum, n)
    join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
   where i.indrelid = rel and i.indisprimary
   order by k.n
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/_row_expression_problem.sql

-- What is wrong with an expression a row trigger declares (docs/design/ingestion.md), or null:
-- it must be one SQL expression over the columns of `qualified` (as the generated function
-- reads them, with an empty search_path), and of type `want_type` when one is given. It is
-- typed, never run: pg_typeof of the expression over no row of the table.
create or replace function switchyard._row_expression_problem(
  qualified text, expression text, want_type text
)
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  found_type text;
begin
  if expression ~ '^\s*$' then
    return 'it is empty: give an SQL expression over the row''s columns';
  end if;
  if position(';' in expression) > 0 then
    return 'it holds a ";": give one SQL expression, not statements';
  end if;
  if position('$sy_row_trigger$' in expression) > 0 then
    return 'it holds the quote $sy_row_trigger$, which the generated function uses';
  end if;
  begin
    execute format(E'select pg_catalog.pg_typeof(s.v)::text from (select (\n%s\n) as v from %s as t '
                   'limit 0) as s right join (select 1) as one on true', expression, qualified)
       into found_type;
  exception when others then
    return sqlerrm || ' (expressions see the row''s columns and an empty search_path: qualify '
      'anything outside pg_catalog)';
  end;
  if want_type is not null and found_type is distinct from want_type then
    return format('it is of type %s, not %s', found_type, want_type);
  end if;
  return null;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/_row_trigger_key.sql

-- The start key a row trigger gives a row's run (docs/design/ingestion.md): the declaration's
-- name, a separator (':' for the declared key, '#' for the backfill's per-row key) and the
-- row's value. Keys are at most 200 characters (docs/design/flow-control.md#start-keys): a longer
-- value is replaced by its md5,
-- so a long column value still names one key and never refuses the app's write.
create or replace function switchyard._row_trigger_key(trigger_name text, separator text, value text)
returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when char_length(trigger_name || separator || value) <= 200
      then trigger_name || separator || value
    else trigger_name || separator || 'md5:' || md5(value)
  end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/_row_trigger_start.sql

-- Starts the run of one row for a row trigger (docs/design/ingestion.md), called by the
-- declaration's generated `_row_start_<name>` with the input, the declared key's value and the
-- primary key's value it computed from the row, in the writer's (or the backfill's)
-- transaction: a rolled back write starts nothing, a committed one has started its run.
--
-- The declared key, when the row has a value for it, names the start with the declared mode.
-- Otherwise, while the declaration's backfill is pending, an insert and the backfill name the
-- row's start by its primary key (mode dedupe, one year), so a row written during the backfill
-- starts once whichever of the two reaches it first. Otherwise the start is a plain one.
--
-- Every start carries its origin (docs/design/origins.md): {kind: 'row_trigger', trigger,
-- table, op} for a write (op insert, update or delete), {kind: 'backfill', trigger} for the
-- backfill's start of a row.
--
-- A batching declaration (batch_by, docs/design/batching.md) makes the row an event of the
-- batch `<name>:<value>` of its batch value, or `<name>` (the table's batch) when the value is
-- null or batch_by is 'table'; the answer is the id of the batch's run.
create or replace function switchyard._row_trigger_start(
  trigger_name text, op text, input jsonb, key_value text, pk_value text,
  batch_value text default null
)
returns uuid
language plpgsql
volatile
set search_path = ''
as $$
declare
  d switchyard.row_triggers;
  run_origin jsonb;
begin
  select * into d from switchyard.row_triggers r where r.name = trigger_name;
  if not found then
    -- Removed in a transaction that also dropped the trigger: nothing fires without a row.
    return null;
  end if;
  if d.batch_by is not null then
    return switchyard.start_flow(d.alias, input,
      batch_key => case when batch_value is null then d.name
                        else switchyard._row_trigger_key(d.name, ':', batch_value) end);
  end if;
  run_origin := case when op = 'BACKFILL'
    then jsonb_build_object('kind', 'backfill', 'trigger', d.name)
    else jsonb_build_object('kind', 'row_trigger', 'trigger', d.name,
                            'table', format('%I.%I', d.table_schema, d.table_name),
                            'op', lower(op)) end;
  if d.key_by is not null and key_value is not null then
    return switchyard.start_flow(d.alias, input,
      key => switchyard._row_trigger_key(d.name, ':', key_value), mode => d.mode,
      ttl => d.ttl, delay => d.delay, max_delay => d.max_delay,
      origin => run_origin);
  end if;
  if pk_value is not null and d.backfill_state = 'pending' and op in ('INSERT', 'BACKFILL') then
    return switchyard.start_flow(d.alias, input,
      key => switchyard._row_trigger_key(d.name, '#', pk_value), mode => 'dedupe',
      ttl => 31536000, origin => run_origin);
  end if;
  return switchyard.start_flow(d.alias, input, origin => run_origin);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/backfill_row_trigger.sql

-- One batch of a row trigger's backfill (docs/design/ingestion.md): starts the runs of the next
-- `batch_size` rows (1 to 10000, default 500) of the table after the cursor, in primary-key
-- order, through the declaration's row function (so its condition, input and key apply), and
-- moves the cursor past them, all in the caller's transaction. Call it until `done`: each batch
-- is its own transaction, so a backfill killed midway rolls back only its current batch and
-- the next call resumes from the last committed cursor; calls on a finished backfill start
-- nothing. Concurrent calls take turns on the declaration's row.
--
-- Safe while the app writes: while the backfill is pending, an insert's run and the backfill's
-- run of a row share a per-row start key (or the declared key), so whichever comes second gets
-- the first's run; a row committed after the last batch read the table was started by its
-- trigger, which no longer keys once the backfill is done (docs/design/ingestion.md has the
-- argument).
--
-- Answers {name, rows, runs, done, total_rows, total_runs, after}: this batch's rows and the
-- runs their starts returned (rows the condition passes), and the totals so far.
create or replace function switchyard.backfill_row_trigger(name text, batch_size int default 500)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  d switchyard.row_triggers;
  rel oid;
  columns_sql text;
  cursor_sql text;
  pk_text_sql text;
  batch_rows int;
  batch_runs int;
  last_pk jsonb;
begin
  if batch_size is null or batch_size not between 1 and 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'batch_size', batch_size::text, format(
      'backfill_row_trigger(%s): batch_size %s is invalid: use 1 to 10000 rows',
      switchyard._clip(backfill_row_trigger.name), coalesce(batch_size::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  select * into d from switchyard.row_triggers r where r.name = backfill_row_trigger.name
     for update;
  if not found then
    perform switchyard._refuse('22023', 'row_trigger_unknown', 'name', backfill_row_trigger.name,
      format('row trigger %s is unknown: see list_row_triggers()',
      switchyard._clip(backfill_row_trigger.name)));
  end if;
  if d.backfill_state is null then
    perform switchyard._refuse('55000', 'backfill_not_declared', 'name', d.name, format(
      'row trigger %s declared no backfill: rows written since its declaration were started '
      'without the backfill''s key and would start twice; declare it with backfill => true',
      d.name));
  end if;
  if d.backfill_state = 'pending' then
    select c.oid into rel from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
     where n.nspname = d.table_schema and c.relname = d.table_name;
    select string_agg(format('sy_t.%I', p.column_name), ', ' order by p.n),
           string_agg(format('$1[%s]::%s', p.n, p.column_type), ', ' order by p.n),
           'array[' || string_agg(format('sy_t.%I::text', p.column_name), ', ' order by p.n) || ']'
      into columns_sql, cursor_sql, pk_text_sql
      from (select k.*, row_number() over () as n from switchyard._primary_key_columns(rel) k) p;
    if columns_sql is null then
      perform switchyard._refuse('55000', 'primary_key_missing', 'name', d.name, format(
        'row trigger %s: table %I.%I has no primary key (any more): the backfill walks it in '
        'primary-key order', d.name, d.table_schema, d.table_name));
    end if;
    execute format($q$
      select count(*)::int, count(s.run_id)::int, (array_agg(to_jsonb(s.pk) order by s.n desc))[1]
        from (select b.n, b.pk, switchyard.%I(b.r, 'BACKFILL') as run_id
                from (select sy_t as r, %s as pk, row_number() over (order by %s) as n
                        from %I.%I as sy_t
                       where %s
                       order by %s
                       limit $2) as b) as s$q$,
      '_row_start_' || d.name, pk_text_sql, columns_sql, d.table_schema, d.table_name,
      case when d.backfill_after is null then 'true'
           else format('(%s) > (%s)', columns_sql, cursor_sql) end,
      columns_sql)
      into batch_rows, batch_runs, last_pk
      using d.backfill_after, batch_size;
    update switchyard.row_triggers r
       set backfill_after = case when last_pk is null then r.backfill_after
                                 else array(select jsonb_array_elements_text(last_pk)) end,
           backfill_rows = r.backfill_rows + batch_rows,
           backfill_started = r.backfill_started + batch_runs,
           backfill_batches = r.backfill_batches + 1,
           backfill_updated_at = switchyard.clock_now(),
           backfill_state = case when batch_rows < batch_size then 'done' else 'pending' end
     where r.name = d.name
    returning * into d;
  else
    batch_rows := 0;
    batch_runs := 0;
  end if;
  return jsonb_build_object('name', d.name, 'rows', batch_rows, 'runs', batch_runs,
    'done', d.backfill_state = 'done', 'total_rows', d.backfill_rows,
    'total_runs', d.backfill_started, 'after', to_jsonb(d.backfill_after));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/declare_row_trigger.sql

-- Declares that writes to a table of the app start runs of an alias (docs/design/ingestion.md):
-- records the declaration in switchyard.row_triggers, generates its functions and creates the
-- trigger `switchyard_<name>` (after each row) on the table, all in the caller's transaction.
--
--   name              ^[a-z][a-z0-9_]{0,46}$, the declaration's name
--   table_name        'table' (schema public) or 'schema.table': a table of the app's own
--                     schemas, never switchyard's, pgmq's, the system's or an extension's
--   alias             the alias (or flow slug) a write starts; it must exist
--   events            any of 'insert', 'update', 'delete' (default insert); a delete's row is
--                     the old one, the others' the new one
--   input_columns     the input: an object of these columns; or
--   input_expression  the input: an SQL expression over the row's columns (to_jsonb of it);
--                     neither: the whole row as an object
--   condition         a boolean SQL expression over the row's columns: rows where it is not
--                     true start nothing
--   key_by            the start key: 'row' (the primary key's value) or a column's value, with
--   mode, ttl, delay, max_delay  the start-key modes of start_flow
-- (docs/design/flow-control.md#start-keys)
--   backfill          true: a backfill of the rows the table already has is pending
--                     (backfill_row_trigger)
--   batch_by          the alias's flow is batched (its batch option, docs/design/batching.md):
--                     each row is an event joining the open batch of 'table' (one batch for
--                     the table), a column's value, or an SQL expression's value over the
--                     row's columns (a null value: the table's batch); not with key_by or a
--                     backfill
--
-- Expressions run in generated functions with an empty search_path: qualify anything outside
-- pg_catalog. They are checked here against the table's columns, not run. The writer needs no
-- privilege on schema switchyard: the generated trigger function is security definer. Declaring
-- needs the CREATE privilege on schema switchyard (the migration role has it): the declaration
-- is part of the app's migrations. The same declaration again returns it and changes nothing;
-- another declaration under a taken name is refused (23505 row_trigger_exists). Every refusal
-- comes before anything is written.
create or replace function switchyard.declare_row_trigger(
  name text, table_name text, alias text, events text[] default array['insert'],
  input_columns text[] default null, input_expression text default null,
  condition text default null, key_by text default null, mode text default null,
  ttl int default null, delay int default null, max_delay int default null,
  backfill boolean default false, batch_by text default null
)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  parts text[];
  schema_name text;
  relation_name text;
  rel oid;
  kind "char";
  pk text[];
  column_found text;
  problem text;
  found_type text;
  wanted switchyard.row_triggers;
  existing switchyard.row_triggers;
  ordered_events text[];
  qualified text;
  input_sql text;
  key_sql text := 'null::text';
  pk_sql text := 'null::text';
  condition_sql text := 'true';
  batch_sql text := 'null::text';
  batch_flow text;
  row_function text;
  trigger_function text;
  reserved constant text[] := array['switchyard', 'pgmq', 'information_schema', 'auth',
    'storage', 'realtime', '_realtime', 'extensions', 'graphql', 'graphql_public', 'vault', 'net',
    'cron', 'pgsodium', 'pgsodium_masks', 'pgbouncer', 'supabase_functions',
    'supabase_migrations', '_analytics'];
begin
  if not pg_catalog.has_schema_privilege('switchyard', 'CREATE') then
    perform switchyard._refuse('42501', 'declare_needs_create', 'name', declare_row_trigger.name,
      format('declare_row_trigger(%s): role %s may not declare row triggers: it needs the CREATE '
        'privilege on schema switchyard; declare them in a migration (the migration role has it)',
        switchyard._clip(declare_row_trigger.name), current_user));
  end if;
  if declare_row_trigger.name is null or declare_row_trigger.name !~ '^[a-z][a-z0-9_]{0,46}$' then
    perform switchyard._refuse('22023', 'row_trigger_name_format', 'name', declare_row_trigger.name,
      format('row trigger name %s is invalid: use lower-case letters, digits and underscores, '
        'starting with a letter (^[a-z][a-z0-9_]{0,46}$)', switchyard._clip(declare_row_trigger.name)));
  end if;

  -- The table: a plain or partitioned table of the app's own schemas.
  begin
    parts := pg_catalog.parse_ident(declare_row_trigger.table_name);
  exception when others then
    parts := null;
  end;
  if parts is null or cardinality(parts) not between 1 and 2 then
    perform switchyard._refuse('22023', 'table_name_format', 'table_name',
      declare_row_trigger.table_name, format(
      'row trigger %s: table %s is invalid: use "table" (schema public) or "schema.table"',
      declare_row_trigger.name, switchyard._clip(declare_row_trigger.table_name)));
  end if;
  schema_name := case when cardinality(parts) = 2 then parts[1] else 'public' end;
  relation_name := parts[cardinality(parts)];
  if schema_name = any (reserved) or schema_name like 'pg\_%' then
    perform switchyard._refuse('22023', 'table_schema_reserved', 'table_name',
      declare_row_trigger.table_name, format(
      'row trigger %s: table %s is invalid: schema %s is not the app''s own (switchyard, pgmq, '
      'the system''s and Supabase''s schemas are refused); declare triggers on your own tables',
      declare_row_trigger.name, switchyard._clip(declare_row_trigger.table_name),
      switchyard._clip(quote_ident(schema_name))),
      context => jsonb_build_object('schema', left(schema_name, 200)));
  end if;
  select c.oid, c.relkind into rel, kind
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where n.nspname = schema_name and c.relname = relation_name;
  if rel is null then
    perform switchyard._refuse('22023', 'table_unknown', 'table_name',
      declare_row_trigger.table_name, format('row trigger %s: table %s does not exist',
      declare_row_trigger.name, switchyard._clip(format('%I.%I', schema_name, relation_name))));
  end if;
  if kind not in ('r', 'p') then
    perform switchyard._refuse('22023', 'table_kind', 'table_name', declare_row_trigger.table_name,
      format('row trigger %s: %I.%I is not a table (a view, sequence or foreign table has no '
      'row triggers of this kind): name a table', declare_row_trigger.name, schema_name,
      relation_name));
  end if;
  if exists (select 1 from pg_catalog.pg_depend dep
              where dep.classid = 'pg_catalog.pg_class'::regclass and dep.objid = rel
                and dep.deptype = 'e')
     or exists (select 1 from pg_catalog.pg_depend dep
                 where dep.classid = 'pg_catalog.pg_namespace'::regclass
                   and dep.objid = (select c.relnamespace from pg_catalog.pg_class c where c.oid = rel)
                   and dep.deptype = 'e') then
    perform switchyard._refuse('22023', 'table_schema_reserved', 'table_name',
      declare_row_trigger.table_name, format(
      'row trigger %s: table %I.%I is invalid: it belongs to an extension, not to the app; '
      'declare triggers on your own tables', declare_row_trigger.name, schema_name,
      relation_name), context => jsonb_build_object('schema', schema_name));
  end if;
  qualified := format('%I.%I', schema_name, relation_name);
  select coalesce(array_agg(p.column_name), '{}') into pk
    from switchyard._primary_key_columns(rel) p;

  if not exists (select 1 from switchyard.aliases a where a.alias = declare_row_trigger.alias)
     and not exists (select 1 from switchyard.flows f
                      where f.flow_slug = declare_row_trigger.alias) then
    perform switchyard._refuse('22023', 'alias_unknown', 'alias', declare_row_trigger.alias, format(
      'row trigger %s: alias %s is unknown: name an alias or flow the SQL core knows (deploy or '
      'compile it first)', declare_row_trigger.name, switchyard._clip(declare_row_trigger.alias)));
  end if;

  select array_agg(e order by array_position(array['insert', 'update', 'delete'], e))
    into ordered_events from unnest(declare_row_trigger.events) as e;
  if ordered_events is null
     or not ordered_events <@ array['insert', 'update', 'delete']
     or cardinality(ordered_events) <> (select count(distinct e) from unnest(ordered_events) e) then
    perform switchyard._refuse('22023', 'events_invalid', 'events',
      declare_row_trigger.events::text, format(
      'row trigger %s: events %s are invalid: use one or more of insert, update, delete, each once',
      declare_row_trigger.name, switchyard._clip(declare_row_trigger.events::text)));
  end if;

  -- The input.
  if declare_row_trigger.input_columns is not null
     and declare_row_trigger.input_expression is not null then
    perform switchyard._refuse('22023', 'input_both', 'input_expression',
      declare_row_trigger.input_expression, format(
      'row trigger %s: give input_columns or input_expression, not both',
      declare_row_trigger.name));
  end if;
  if declare_row_trigger.input_columns is not null then
    if cardinality(declare_row_trigger.input_columns) = 0
       or cardinality(declare_row_trigger.input_columns) <> (
         select count(distinct c) from unnest(declare_row_trigger.input_columns) c) then
      perform switchyard._refuse('22023', 'input_columns_invalid', 'input_columns',
        declare_row_trigger.input_columns::text, format(
        'row trigger %s: input_columns %s are invalid: name one or more columns, each once',
        declare_row_trigger.name, switchyard._clip(declare_row_trigger.input_columns::text)));
    end if;
    foreach column_found in array declare_row_trigger.input_columns loop
      if column_found is null or not exists (
           select 1 from pg_catalog.pg_attribute a
            where a.attrelid = rel and a.attname = column_found and a.attnum > 0
              and not a.attisdropped) then
        perform switchyard._refuse('22023', 'column_unknown', 'input_columns', column_found,
          format('row trigger %s: column %s is not a column of %s', declare_row_trigger.name,
          switchyard._clip(column_found), qualified),
          context => jsonb_build_object('table', qualified));
      end if;
    end loop;
    select 'jsonb_build_object(' || string_agg(format('%L, t.%I', c, c), ', ' order by n) || ')'
      into input_sql from unnest(declare_row_trigger.input_columns) with ordinality as u(c, n);
  elsif declare_row_trigger.input_expression is not null then
    input_sql := E'to_jsonb((\n' || declare_row_trigger.input_expression || E'\n))';
  else
    input_sql := 'to_jsonb(sy_row)';
  end if;

  -- Expressions: one SQL expression each, typed against the table's columns without running.
  if declare_row_trigger.input_expression is not null then
    problem := switchyard._row_expression_problem(qualified, declare_row_trigger.input_expression,
                                                  null);
    if problem is not null then
      perform switchyard._refuse('22023', 'input_expression_invalid', 'input_expression',
        declare_row_trigger.input_expression, format(
        'row trigger %s: input_expression %s is invalid: %s', declare_row_trigger.name,
        switchyard._clip(declare_row_trigger.input_expression), problem),
        context => jsonb_build_object('table', qualified, 'problem', problem));
    end if;
  end if;
  if declare_row_trigger.condition is not null then
    problem := switchyard._row_expression_problem(qualified, declare_row_trigger.condition,
                                                  'boolean');
    if problem is not null then
      perform switchyard._refuse('22023', 'condition_invalid', 'condition',
        declare_row_trigger.condition, format(
        'row trigger %s: condition %s is invalid: %s', declare_row_trigger.name,
        switchyard._clip(declare_row_trigger.condition), problem),
        context => jsonb_build_object('table', qualified, 'problem', problem));
    end if;
    condition_sql := E'(\n' || declare_row_trigger.condition || E'\n)';
  end if;

  -- The start key.
  if declare_row_trigger.key_by = 'row' or coalesce(declare_row_trigger.backfill, false) then
    if cardinality(pk) = 0 then
      perform switchyard._refuse('22023', 'primary_key_missing',
        case when declare_row_trigger.key_by = 'row' then 'key_by' else 'backfill' end,
        case when declare_row_trigger.key_by = 'row' then 'row' else 'true' end, format(
        'row trigger %s: %s needs a primary key on %s to name each row: add one, or key by a '
        'column', declare_row_trigger.name,
        case when declare_row_trigger.key_by = 'row' then 'key_by ''row''' else 'a backfill' end,
        qualified), context => jsonb_build_object('table', qualified));
    end if;
    select case when cardinality(pk) = 1 then format('t.%I::text', pk[1])
                else 'jsonb_build_array(' || string_agg(format('t.%I', c), ', ' order by n)
                     || ')::text' end
      into pk_sql from unnest(pk) with ordinality as u(c, n);
  end if;
  if declare_row_trigger.key_by = 'row' then
    key_sql := pk_sql;
  elsif declare_row_trigger.key_by is not null then
    if not exists (select 1 from pg_catalog.pg_attribute a
                    where a.attrelid = rel and a.attname = declare_row_trigger.key_by
                      and a.attnum > 0 and not a.attisdropped) then
      perform switchyard._refuse('22023', 'column_unknown', 'key_by', declare_row_trigger.key_by,
        format('row trigger %s: key_by %s is invalid: use ''row'' (the primary key) or a column '
        'of %s', declare_row_trigger.name, switchyard._clip(declare_row_trigger.key_by),
        qualified), context => jsonb_build_object('table', qualified));
    end if;
    key_sql := format('t.%I::text', declare_row_trigger.key_by);
  end if;
  if not coalesce(declare_row_trigger.backfill, false) then
    pk_sql := 'null::text';
  end if;

  -- Batching: the flow must be batched, and each row is an event, so no start key or backfill.
  if declare_row_trigger.batch_by is not null then
    if declare_row_trigger.key_by is not null or coalesce(declare_row_trigger.backfill, false) then
      perform switchyard._refuse('22023', 'batch_with_key', 'batch_by', declare_row_trigger.batch_by,
        format('row trigger %s: batch_by comes with %s: a batched row joins a batch and starts no '
        'run of its own, so it takes no start key, and a backfill (which relies on one) is not '
        'offered for it; declare batch_by alone', declare_row_trigger.name,
        case when declare_row_trigger.key_by is not null then 'key_by' else 'backfill' end));
    end if;
    select nullif(f.shape -> 'options' -> 'batch', 'null'::jsonb)::text into batch_flow
      from switchyard.flows f where f.flow_slug = switchyard.resolve_flow(declare_row_trigger.alias);
    if batch_flow is null then
      perform switchyard._refuse('22023', 'batch_not_declared', 'batch_by',
        declare_row_trigger.batch_by, format('row trigger %s: batch_by %s is refused: alias %s '
        'names flow %s, which has no batch option; declare batch: { maxSize, timeout } on the '
        'flow first', declare_row_trigger.name, switchyard._clip(declare_row_trigger.batch_by),
        switchyard._clip(declare_row_trigger.alias),
        to_json(switchyard.resolve_flow(declare_row_trigger.alias))::text));
    end if;
    if declare_row_trigger.batch_by = 'table' then
      batch_sql := 'null::text';
    elsif exists (select 1 from pg_catalog.pg_attribute a
                   where a.attrelid = rel and a.attname = declare_row_trigger.batch_by
                     and a.attnum > 0 and not a.attisdropped) then
      batch_sql := format('t.%I::text', declare_row_trigger.batch_by);
    else
      problem := switchyard._row_expression_problem(qualified, declare_row_trigger.batch_by, null);
      if problem is not null then
        perform switchyard._refuse('22023', 'batch_by_invalid', 'batch_by',
          declare_row_trigger.batch_by, format(
          'row trigger %s: batch_by %s is invalid: use ''table'', a column of %s or an SQL '
          'expression over its columns: %s', declare_row_trigger.name,
          switchyard._clip(declare_row_trigger.batch_by), qualified, problem),
          context => jsonb_build_object('table', qualified, 'problem', problem));
      end if;
      batch_sql := E'((\n' || declare_row_trigger.batch_by || E'\n))::text';
    end if;
  end if;
  perform switchyard._check_start_key(declare_row_trigger.alias, null, null,
    case when declare_row_trigger.key_by is null then null else 'k' end,
    declare_row_trigger.mode, declare_row_trigger.ttl, declare_row_trigger.delay,
    declare_row_trigger.max_delay);

  wanted := row(declare_row_trigger.name, schema_name, relation_name, declare_row_trigger.alias,
    ordered_events, declare_row_trigger.input_columns, declare_row_trigger.input_expression,
    declare_row_trigger.condition, declare_row_trigger.key_by, declare_row_trigger.mode,
    declare_row_trigger.ttl, declare_row_trigger.delay, declare_row_trigger.max_delay,
    case when coalesce(declare_row_trigger.backfill, false) then 'pending' end, null, 0, 0, 0, null,
    switchyard.clock_now(), declare_row_trigger.batch_by)::switchyard.row_triggers;
  select * into existing from switchyard.row_triggers r where r.name = declare_row_trigger.name
     for update;
  if found then
    if (existing.table_schema, existing.table_name, existing.alias, existing.events,
        existing.input_columns, existing.input_expression, existing.condition, existing.key_by,
        existing.mode, existing.ttl, existing.delay, existing.max_delay,
        existing.backfill_state is not null, existing.batch_by)
       is not distinct from
       (wanted.table_schema, wanted.table_name, wanted.alias, wanted.events, wanted.input_columns,
        wanted.input_expression, wanted.condition, wanted.key_by, wanted.mode, wanted.ttl,
        wanted.delay, wanted.max_delay, wanted.backfill_state is not null, wanted.batch_by) then
      return switchyard._row_trigger_json(existing);
    end if;
    perform switchyard._refuse('23505', 'row_trigger_exists', 'name', declare_row_trigger.name,
      format('row trigger %s already exists with another declaration (on %I.%I, alias %s): '
      'remove it first (remove_row_trigger), or choose another name', declare_row_trigger.name,
      existing.table_schema, existing.table_name, existing.alias));
  end if;

  insert into switchyard.row_triggers select (wanted).*;
  row_function := '_row_start_' || declare_row_trigger.name;
  trigger_function := '_row_trigger_' || declare_row_trigger.name;
  -- The row function: computes the row's condition, input, key and primary key in one
  -- statement over the row's columns, and starts through _row_trigger_start. The backfill
  -- calls it too, so a write and the backfill start a row alike.
  execute format($f$
create function switchyard.%I(sy_row %s, sy_op text)
returns uuid
language plpgsql
volatile
set search_path = ''
as $sy_row_trigger$
#variable_conflict use_column
declare
  sy_ok boolean;
  sy_input jsonb;
  sy_key text;
  sy_pk text;
  sy_batch text;
begin
  select %s,
         %s,
         %s,
         %s,
         %s
    into sy_ok, sy_input, sy_key, sy_pk, sy_batch
    from (select (sy_row).*) as t;
  if sy_ok is not true then
    return null;
  end if;
  return switchyard._row_trigger_start(%L, sy_op, sy_input, sy_key, sy_pk, sy_batch);
end
$sy_row_trigger$
$f$, row_function, qualified, condition_sql, input_sql, key_sql, pk_sql, batch_sql,
    declare_row_trigger.name);
  -- The trigger function: security definer, so the writer needs no privilege on switchyard.
  execute format($f$
create function switchyard.%I()
returns trigger
language plpgsql
volatile
security definer
set search_path = ''
as $sy_row_trigger$
declare
  sy_row %s;
begin
  -- On a partition of a partitioned table the row has the partition's type: the assignment
  -- makes it the declared table's.
  if tg_op = 'DELETE' then
    sy_row := old;
  else
    sy_row := new;
  end if;
  perform switchyard.%I(sy_row, tg_op);
  return null;
end
$sy_row_trigger$
$f$, trigger_function, qualified, row_function);
  execute format('create trigger %I after %s on %s for each row execute function switchyard.%I()',
    'switchyard_' || declare_row_trigger.name, array_to_string(ordered_events, ' or '), qualified,
    trigger_function);
  return switchyard._row_trigger_json(wanted);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/list_row_triggers.sql

-- Every row trigger declaration (docs/design/ingestion.md) as _row_trigger_json answers one,
-- by name. For `switchyard trigger list` and the ops wrapper listRowTriggers. PL/pgSQL, so it
-- may be created before _row_trigger_json, which takes the table's row type.
create or replace function switchyard.list_row_triggers()
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
begin
  return (select coalesce(jsonb_agg(switchyard._row_trigger_json(d) order by d.name), '[]'::jsonb)
            from switchyard.row_triggers d);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/remove_row_trigger.sql

-- Removes a row trigger declaration (docs/design/ingestion.md): its trigger on the table, its
-- generated functions and its row, in the caller's transaction. True if there was one, false
-- if not (so a migration that removes it twice changes nothing). Like declaring, removing
-- needs the CREATE privilege on schema switchyard (the migration role).
create or replace function switchyard.remove_row_trigger(name text)
returns boolean
language plpgsql
volatile
set search_path = ''
as $$
declare
  d switchyard.row_triggers;
begin
  if not pg_catalog.has_schema_privilege('switchyard', 'CREATE') then
    perform switchyard._refuse('42501', 'declare_needs_create', 'name', remove_row_trigger.name,
      format('remove_row_trigger(%s): role %s may not remove row triggers: it needs the CREATE '
        'privilege on schema switchyard; remove them in a migration (the migration role has it)',
        switchyard._clip(remove_row_trigger.name), current_user));
  end if;
  select * into d from switchyard.row_triggers r where r.name = remove_row_trigger.name for update;
  if not found then
    return false;
  end if;
  -- The table may be gone (dropped with cascade, which took the trigger and functions along).
  if exists (select 1 from pg_catalog.pg_class c
               join pg_catalog.pg_namespace n on n.oid = c.relnamespace
              where n.nspname = d.table_schema and c.relname = d.table_name) then
    execute format('drop trigger if exists %I on %I.%I', 'switchyard_' || d.name, d.table_schema,
                   d.table_name);
  end if;
  execute format('drop function if exists switchyard.%I()', '_row_trigger_' || d.name);
  if exists (select 1 from pg_catalog.pg_proc p
              where p.pronamespace = 'switchyard'::regnamespace
                and p.proname = '_row_start_' || d.name) then
    execute format('drop function switchyard.%I', '_row_start_' || d.name);
  end if;
  delete from switchyard.row_triggers r where r.name = d.name;
  return true;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/_check_worker_function.sql

-- Function names (at most 63 characters) and their queue, which must be in the queue catalog
-- (docs/design/overview.md#queue-ownership): register_function no longer accepts a queue that
-- exists nowhere
-- (the scaffold's migration provisions its shared queue first), register_worker already checks.
create or replace function switchyard._check_worker_function()
returns trigger
language plpgsql
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_function_name_chars');
begin
  if char_length(new.function_name) > max_chars then
    perform switchyard._refuse('22023', 'max_function_name_chars', 'function_name',
      new.function_name, format(
      'function name %s is %s characters long, over the limit of %s characters',
      switchyard._clip(new.function_name), char_length(new.function_name), max_chars),
      context => jsonb_build_object('size', char_length(new.function_name), 'limit', max_chars));
  end if;
  if not exists (select 1 from switchyard.queues q where q.queue_name = new.queue_name) then
    perform switchyard._refuse('22023', 'queue_unknown', 'queue_name', new.queue_name, format(
      'function %s: queue %s is unknown: it is not in the queue catalog (switchyard.queues), so no '
      'compiled flow routes a step to it; provision a shared queue first with '
      'select switchyard.ensure_shared_queue(%L), or start a worker that routes to it',
      to_json(new.function_name)::text, switchyard._clip(new.queue_name), new.queue_name),
      context => jsonb_build_object('function_name', left(new.function_name, 200)));
  end if;
  return new;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/_worker_running.sql

-- Worker liveness (docs/design/versions.md), defined once for every SQL function that asks.
--   running: not stopped, and heart-beat within the window (a worker that crashed without
--            stopping stops counting once its heartbeat is that old). A deprecated worker
--            still runs until it stops: a fence waits for it (fence_status), and stall
--            recovery leaves its tasks alone (recover_stalled recovers the tasks of workers
--            that are not running).
--   live:    running and not deprecated: the keep-alive wakes a queue function without a
--            live worker (keep_alive, function_states).
-- Plain SQL expressions, neither STRICT nor security definer and without SET options, so
-- the planner inlines them into the calling statement: the caller's index use is unchanged.
-- (That is also why search_path is not pinned here; the functions are schema-qualified and
-- every caller in the kit pins its own.)
create or replace function switchyard._worker_running(
  stopped_at timestamptz, last_heartbeat_at timestamptz, heartbeat_window_seconds int
)
returns boolean
language sql
stable
as $$
  select stopped_at is null
     and last_heartbeat_at >= switchyard.clock_now()
                              - pg_catalog.make_interval(secs => heartbeat_window_seconds)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/deprecate_workers.sql

-- Asks every worker of a queue function that has not stopped yet to stop.
create or replace function switchyard.deprecate_workers(function_name text)
returns int
language sql
volatile
security definer
set search_path = ''
as $$
  with d as (
    update switchyard.workers w
       set deprecated_at = coalesce(w.deprecated_at, switchyard.clock_now())
     where w.function_name = deprecate_workers.function_name and w.stopped_at is null
    returning 1
  )
  select count(*)::int from d;
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/fence_begin.sql

-- Opens the fenced rollout (docs/design/versions.md): records every given queue function's
-- enabled flag, disables them and deprecates their workers, so no old worker takes work while
-- the new version deploys. Fences do not nest (SY010); unknown functions are refused (SY003).
create or replace function switchyard.fence_begin(function_names text[])
returns table (fence_id bigint, function_name text, was_enabled boolean, deprecated_workers int)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  names text[];
  unknown text[];
  open_fence switchyard.fences;
  new_fence bigint;
  fn text;
  previous boolean;
  deprecated int;
begin
  if function_names is null or cardinality(function_names) = 0 then
    perform switchyard._refuse('22023', 'function_names_missing', 'function_names',
      function_names::text,
      'fence_begin: no functions given: list every queue function the rollout affects');
  end if;
  if array_position(function_names, null) is not null then
    perform switchyard._refuse('22023', 'function_name_null', 'function_names',
      function_names::text,
      'fence_begin: a function name is null: list function names only');
  end if;
  perform switchyard._lock_fences();

  select * into open_fence from switchyard.fences f where f.closed_at is null;
  if found then
    raise exception using errcode = 'SY010', message = format(
      'fence_begin: fence %s is already open since %s over functions %s; fences do not nest',
      open_fence.fence_id, open_fence.opened_at,
      (select string_agg(switchyard._clip(m.function_name), ', ' order by m.function_name)
         from switchyard.fence_members m where m.fence_id = open_fence.fence_id)),
      detail = jsonb_build_object('fence_id', open_fence.fence_id)::text,
      hint = 'finish that rollout with select * from switchyard.fence_end() first';
  end if;

  -- Sorted and distinct, so concurrent callers lock rows in one order.
  select array_agg(distinct n order by n) into names from unnest(function_names) n;
  select array_agg(n order by n) into unknown
    from unnest(names) n
   where not exists (select 1 from switchyard.worker_functions f where f.function_name = n);
  if unknown is not null then
    raise exception using errcode = 'SY003', message = format(
      'fence_begin: unknown function(s) %s: register a function with its scaffold migration '
      '(switchyard.register_function) or start its worker once',
      (select string_agg(switchyard._clip(u), ', ') from unnest(unknown) u)),
      detail = jsonb_build_object(
        'function_names', (select jsonb_agg(left(u, 200) order by u) from unnest(unknown) u))::text;
  end if;

  insert into switchyard.fences as fe default values returning fe.fence_id into new_fence;
  foreach fn in array names loop
    -- The row lock waits for a worker registering right now (register_worker
    -- holds a share lock); that worker is then live and deprecated below.
    select f.enabled into previous from switchyard.worker_functions f
     where f.function_name = fn for update;
    update switchyard.worker_functions f set enabled = false where f.function_name = fn;
    deprecated := switchyard.deprecate_workers(fn);
    insert into switchyard.fence_members (fence_id, function_name, was_enabled, deprecated_workers)
    values (new_fence, fn, previous, deprecated);
  end loop;

  return query
    select m.fence_id, m.function_name, m.was_enabled, m.deprecated_workers
      from switchyard.fence_members m
     where m.fence_id = new_fence
     order by m.function_name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/fence_end.sql

-- Closes the open fence and sets every member's enabled flag back to the value
-- recorded at fence_begin: only queue functions that were enabled before are enabled.
create or replace function switchyard.fence_end()
returns table (fence_id bigint, function_name text, was_enabled boolean, enabled boolean)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  open_id bigint;
begin
  perform switchyard._lock_fences();
  select f.fence_id into open_id from switchyard.fences f where f.closed_at is null for update;
  if not found then
    raise exception using errcode = 'SY011', message = 'fence_end: no fence is open',
      detail = jsonb_build_object()::text,
      hint = 'open one with select * from switchyard.fence_begin(array[''<function>'', ...])';
  end if;
  update switchyard.worker_functions f
     set enabled = m.was_enabled
    from switchyard.fence_members m
   where m.fence_id = open_id and f.function_name = m.function_name;
  update switchyard.fences f set closed_at = switchyard.clock_now() where f.fence_id = open_id;
  return query
    select m.fence_id, m.function_name, m.was_enabled, f.enabled
      from switchyard.fence_members m
      join switchyard.worker_functions f on f.function_name = m.function_name
     where m.fence_id = open_id
     order by m.function_name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/fence_status.sql

-- The open fence, one row per member queue function; no rows when no fence is open.
-- live_workers: workers that still run (switchyard._worker_running: not stopped and
-- heart-beat within the window, switchyard._heartbeat_window: the worker's own window, or
-- heartbeat_window_seconds when that is larger; the workers fence_begin deprecated count
-- until they stop, which is what the fence waits for). started_tasks: tasks those workers
-- still run. stalled_tasks: started tasks held by workers of the function that stopped or
-- went silent; they do not hold the fence, the next worker's stall recovery requeues them.
-- quiet: no live worker and no started task of one.
create or replace function switchyard.fence_status(heartbeat_window_seconds int default 15)
returns table (
  fence_id bigint, opened_at timestamptz, function_name text, queue_name text,
  was_enabled boolean, enabled boolean, paused boolean,
  live_workers int, started_tasks int, stalled_tasks int, quiet boolean
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'fence_status: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  return query
    with members as (
      select fe.fence_id, fe.opened_at, m.function_name, m.was_enabled,
             f.queue_name, f.enabled, f.paused_at is not null as paused
        from switchyard.fences fe
        join switchyard.fence_members m on m.fence_id = fe.fence_id
        join switchyard.worker_functions f on f.function_name = m.function_name
       where fe.closed_at is null
    ),
    workers as (
      select w.function_name, w.worker_id,
             switchyard._worker_running(
               w.stopped_at, w.last_heartbeat_at,
               switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                            fence_status.heartbeat_window_seconds)) as live
        from switchyard.workers w
       where w.function_name in (select mb.function_name from members mb)
    ),
    counted as (
      select mb.function_name,
             (select count(*) from workers w
               where w.function_name = mb.function_name and w.live)::int as live_workers,
             (select count(*) from switchyard.step_tasks t
                join workers w on w.worker_id = t.worker_id and w.live
               where w.function_name = mb.function_name and t.status = 'started')::int as started_tasks,
             (select count(*) from switchyard.step_tasks t
                join workers w on w.worker_id = t.worker_id and not w.live
               where w.function_name = mb.function_name and t.status = 'started')::int as stalled_tasks
        from members mb
    )
    select mb.fence_id, mb.opened_at, mb.function_name, mb.queue_name,
           mb.was_enabled, mb.enabled, mb.paused,
           c.live_workers, c.started_tasks, c.stalled_tasks,
           c.live_workers = 0 and c.started_tasks = 0
      from members mb
      join counted c on c.function_name = mb.function_name
     order by mb.function_name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/function_states.sql

-- Every queue function with its durable flags and its number of live workers (see
-- switchyard._worker_live; each worker judged by its own window, or by
-- heartbeat_window_seconds when that is larger), by name; one row when a name is given, none
-- when it is unknown.
create or replace function switchyard.function_states(
  p_function_name text default null,
  heartbeat_window_seconds int default 15
)
returns table (
  function_name text, queue_name text, enabled boolean, paused_at timestamptz,
  pause_reason text, last_woken_at timestamptz, live_workers int
)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'function_states: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  return query
    select f.function_name, f.queue_name, f.enabled, f.paused_at, f.pause_reason,
           f.last_woken_at,
           (select count(*) from switchyard.workers w
             where w.function_name = f.function_name
               and switchyard._worker_live(
                     w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                     switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                                  function_states.heartbeat_window_seconds)))::int
      from switchyard.worker_functions f
     where p_function_name is null or f.function_name = p_function_name
     order by f.function_name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/heartbeat.sql

-- Heartbeat; tells the worker whether it must stop: 'ok', 'deprecated', 'paused' or 'disabled'.
create or replace function switchyard.heartbeat(worker_id uuid)
returns text
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  w switchyard.workers;
  fn switchyard.worker_functions;
begin
  update switchyard.workers x set last_heartbeat_at = switchyard.clock_now()
   where x.worker_id = heartbeat.worker_id
  returning * into w;
  if not found then
    return 'deprecated';
  end if;
  select * into fn from switchyard.worker_functions f where f.function_name = w.function_name;
  if w.deprecated_at is not null or w.stopped_at is not null then
    return 'deprecated';
  elsif fn.paused_at is not null then
    return 'paused';
  elsif not fn.enabled then
    return 'disabled';
  end if;
  return 'ok';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/pause_function.sql

-- Pauses a queue function durably (docs/design/worker.md#worker-states-and-parts): its workers stop
-- taking work and
-- a new worker refuses to start until resume_function. The reason is required and kept.
create or replace function switchyard.pause_function(function_name text, reason text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  max_chars int := switchyard.limit_value('max_reason_chars');
begin
  if coalesce(trim(reason), '') = '' then
    perform switchyard._refuse('22023', 'reason_missing', 'reason', reason,
      'pause_function: a reason is required');
  end if;
  if char_length(reason) > max_chars then
    perform switchyard._refuse('22023', 'max_reason_chars', 'reason', reason, format(
      'pause_function(%s): the reason is %s characters long, over the limit of %s characters; '
      'say why in fewer words and keep the details elsewhere',
      switchyard._clip(pause_function.function_name), char_length(reason), max_chars),
      context => jsonb_build_object('size', char_length(reason), 'limit', max_chars));
  end if;
  update switchyard.worker_functions f
     set paused_at = switchyard.clock_now(), pause_reason = reason
   where f.function_name = pause_function.function_name and f.paused_at is null;
  if found then
    return true;
  end if;
  if not exists (select 1 from switchyard.worker_functions f where f.function_name = pause_function.function_name) then
    raise exception using errcode = 'SY003', message = format(
      'unknown function %s', switchyard._clip(pause_function.function_name)),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(pause_function.function_name, 200)))::text;
  end if;
  return false;      -- already paused: the first reason is kept
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/quarantine_messages.sql

-- Moves the messages that paused a queue function (an unsupported batch,
-- docs/design/claim.md#the-unsupported-batch) and have no task out of its queue into
-- switchyard.quarantined_messages, with their
-- bodies; resumes the function when none of them had a task. Returns what it moved, what had a
-- task and what was already gone.
create or replace function switchyard.quarantine_messages(function_name text)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  fn switchyard.worker_functions;
  queue text;
  named bigint[];
  moved bigint[];
  with_task jsonb;
  present bigint[];
  gone bigint[];
begin
  select * into fn from switchyard.worker_functions f
   where f.function_name = quarantine_messages.function_name for update;
  if not found then
    raise exception using errcode = 'SY003', message = format(
      'quarantine: unknown function %s', switchyard._clip(quarantine_messages.function_name)),
      detail = jsonb_build_object(
        'function_names', jsonb_build_array(left(quarantine_messages.function_name, 200)))::text;
  end if;
  if fn.paused_at is null then
    perform switchyard._refuse('55000', 'function_not_paused', 'function_name', fn.function_name,
      format(
      'quarantine: function %s is not paused: nothing to quarantine', switchyard._clip(fn.function_name)));
  end if;
  if fn.pause_detail is null or jsonb_typeof(fn.pause_detail -> 'message_ids') is distinct from 'array' then
    perform switchyard._refuse('55000', 'pause_names_no_messages', 'function_name',
      fn.function_name, format(
      'quarantine: function %s was paused by an operator (%s), naming no messages: resume it with deno task resume',
      switchyard._clip(fn.function_name), left(fn.pause_reason, 200)),
      context => jsonb_build_object('reason', fn.pause_reason));
  end if;
  queue := fn.pause_detail ->> 'queue';
  select coalesce(array_agg(distinct (e #>> '{}')::bigint), '{}') into named
    from jsonb_array_elements(fn.pause_detail -> 'message_ids') e;

  -- Named messages that belong to a task: left alone.
  select coalesce(jsonb_agg(jsonb_build_object('message_id', t.message_id::text,
                                               'pair', t.flow_slug || '/' || t.step_slug)
                            order by t.message_id), '[]')
    into with_task
    from switchyard.step_tasks t
   where t.queue_name = queue and t.message_id = any (named);

  -- The rest, while still in the queue: locked, copied with their bodies, then deleted.
  execute format(
    'with foreign_rows as (
       select m.msg_id, m.read_ct, m.enqueued_at, m.message, m.headers from pgmq.%I m
        where m.msg_id = any ($1)
          and not exists (select 1 from switchyard.step_tasks t
                           where t.queue_name = $2 and t.message_id = m.msg_id)
        order by m.msg_id
          for update of m
     ), kept as (
       insert into switchyard.quarantined_messages
         (queue_name, msg_id, read_ct, enqueued_at, message, headers, function_name, pause_reason)
       select $2, f.msg_id, f.read_ct, f.enqueued_at, f.message, f.headers, $3, $4
         from foreign_rows f
       returning msg_id
     )
     select coalesce(array_agg(k.msg_id order by k.msg_id), ''{}'') from kept k',
    pgmq.format_table_name(queue, 'q'))
    into moved
    using named, queue, fn.function_name, fn.pause_reason;
  if cardinality(moved) > 0 then
    perform pgmq.delete(queue, moved);
  end if;

  execute format('select coalesce(array_agg(m.msg_id), ''{}'') from pgmq.%I m where m.msg_id = any ($1)',
                 pgmq.format_table_name(queue, 'q'))
    into present using named;
  select coalesce(array_agg(n order by n), '{}') into gone
    from unnest(named) n
   where not (n = any (moved)) and not (n = any (present))
     and not exists (select 1 from switchyard.step_tasks t where t.queue_name = queue and t.message_id = n);

  if jsonb_array_length(with_task) = 0 then
    update switchyard.worker_functions f
       set paused_at = null, pause_reason = null, pause_detail = null
     where f.function_name = fn.function_name;
  end if;
  return jsonb_build_object(
    'function_name', fn.function_name,
    'queue', queue,
    'quarantined', (select coalesce(jsonb_agg(x::text order by x), '[]') from unnest(moved) x),
    'with_task', with_task,
    'gone', (select coalesce(jsonb_agg(x::text order by x), '[]') from unnest(gone) x),
    'resumed', jsonb_array_length(with_task) = 0);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/record_refusal.sql

-- Records that a queue function's worker refused to start (the error of its HTTP answer:
-- function_paused, function_disabled, coverage, worker_config, start_failed) or paused on
-- unsupported work, with the message it logged
-- (docs/design/worker.md#refusals-are-seen-where-operators-look). One row per function
-- and kind: a repeat moves last_at, counts and keeps the latest message, cut at 2000 characters
-- (a record is never refused for its length). The worker calls it best effort.
create or replace function switchyard.record_refusal(function_name text, refusal text, message text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  max_name int := switchyard.limit_value('max_function_name_chars');
  kinds text[] := array['function_paused', 'function_disabled', 'coverage', 'worker_config',
                        'start_failed', 'unsupported_work'];
  text_ text;
begin
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$'
     or char_length(function_name) > max_name then
    perform switchyard._refuse('22023', 'function_name_format', 'function_name', function_name,
      format(
      'record_refusal: function name %s is invalid: use lower-case letters, digits, "-" and "_" '
      '(^[a-z][a-z0-9_-]*$), at most %s characters', switchyard._clip(function_name), max_name));
  end if;
  if refusal is null or not refusal = any (kinds) then
    perform switchyard._refuse('22023', 'refusal_unknown', 'refusal', refusal, format(
      'record_refusal: refusal %s is unknown: use %s', switchyard._clip(refusal),
      array_to_string(kinds, ', ')));
  end if;
  if coalesce(trim(message), '') = '' then
    perform switchyard._refuse('22023', 'message_missing', 'message', message,
      'record_refusal: a message is required');
  end if;
  text_ := case when char_length(message) <= 2000 then message
                else left(message, 2000) || format('... (%s characters)', char_length(message)) end;
  insert into switchyard.refusals as r (function_name, refusal, message)
  values (record_refusal.function_name, record_refusal.refusal, text_)
  on conflict on constraint refusals_pkey do update
     set message = excluded.message, last_at = switchyard.clock_now(), count = r.count + 1;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/register_function.sql

-- Records a queue function and its queue (a scaffold migration's step), so operators can pause,
-- fence and wake it before its first worker starts.
create or replace function switchyard.register_function(function_name text, queue_name text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    perform switchyard._refuse('22023', 'function_name_format', 'function_name', function_name,
      format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      switchyard._clip(function_name)));
  end if;
  perform switchyard.assert_queue_name(queue_name, false);
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_function.function_name, register_function.queue_name)
  on conflict on constraint worker_functions_pkey do update set queue_name = excluded.queue_name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/register_worker.sql

-- Registers a worker for one physical queue. Upserts its queue function's row but
-- never re-enables a disabled or paused queue function: those refuse to start. The
-- supported pairs are stored once, as a row set, for the claim path. The heartbeat
-- window is stored with the worker: stall recovery judges each worker by its own
-- (docs/design/claim.md#stall-recovery).
create or replace function switchyard.register_worker(
  worker_id uuid, queue_name text, function_name text, supported_pairs text[],
  heartbeat_window_seconds int default 15
)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  fn switchyard.worker_functions;
begin
  if heartbeat_window_seconds is null
     or heartbeat_window_seconds < switchyard.heartbeat_window_floor_seconds() then
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'register_worker: heartbeat_window_seconds %s is invalid: use at least %s seconds '
      '(and at least 3 heartbeat intervals)',
      coalesce(heartbeat_window_seconds::text, 'null'), switchyard.heartbeat_window_floor_seconds()),
      context => jsonb_build_object('min', switchyard.heartbeat_window_floor_seconds()));
  end if;
  if not exists (select 1 from switchyard.queues q where q.queue_name = queue) then
    perform switchyard._refuse('22023', 'queue_unknown', 'queue_name', queue, format(
      'queue %s is not registered: no compiled flow routes a step to it', to_json(queue)::text));
  end if;
  if function_name is null or function_name !~ '^[a-z][a-z0-9_-]*$' then
    perform switchyard._refuse('22023', 'function_name_format', 'function_name', function_name,
      format(
      'function name %s is invalid: use lower-case letters, digits, "-" and "_" (^[a-z][a-z0-9_-]*$)',
      coalesce(to_json(function_name)::text, 'null')));
  end if;
  insert into switchyard.worker_functions (function_name, queue_name)
  values (register_worker.function_name, queue)
  on conflict do nothing;
  select * into fn from switchyard.worker_functions f
   where f.function_name = register_worker.function_name for share;
  if fn.queue_name <> queue then
    perform switchyard._refuse('22023', 'function_queue_mismatch', 'queue_name', queue, format(
      'function %s is registered for queue %s, not %s',
      to_json(fn.function_name)::text, to_json(fn.queue_name)::text, to_json(queue)::text),
      context => jsonb_build_object('function_name', fn.function_name,
        'registered_queue', fn.queue_name));
  end if;
  if fn.paused_at is not null then
    raise exception using errcode = 'SY001', message = format(
      'function %s is paused: %s', to_json(fn.function_name)::text, fn.pause_reason),
      detail = jsonb_build_object(
        'function_name', fn.function_name, 'reason', fn.pause_reason)::text,
      hint = format('fix the registry, then select switchyard.resume_function(%L)', fn.function_name);
  end if;
  if not fn.enabled then
    raise exception using errcode = 'SY002', message = format(
      'function %s is disabled', to_json(fn.function_name)::text),
      detail = jsonb_build_object('function_name', fn.function_name)::text,
      hint = 'a fenced rollout disabled it; switchyard.fence_end() or set_function_enabled re-enables it';
  end if;
  insert into switchyard.workers (worker_id, queue_name, function_name, pair_set,
                                  heartbeat_window_seconds)
  values (register_worker.worker_id, queue, register_worker.function_name,
          switchyard.pair_set(supported_pairs), register_worker.heartbeat_window_seconds);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/worker_heartbeat.sql

-- The heartbeat of a 0.4.0 runtime (docs/design/worker.md#worker-states-and-parts, "Cancellation
-- reaches handlers"):
-- switchyard.heartbeat's state ('ok', 'deprecated', 'paused' or 'disabled'), and the runs of the
-- tasks this worker holds started that are no longer started (cancelled, or failed by another
-- task), each with its status and error, so the worker aborts those handlers' signals. One
-- probe of the worker's started tasks (index step_tasks_worker) per heartbeat: no extra round
-- trip per task. switchyard.heartbeat stays for older runtimes. The first heartbeat of a minute
-- also takes the minute's sample of the metrics (sample_metrics,
-- docs/design/observability.md#counters-histograms-and-levels),
-- in a subtransaction whose failure is a warning, never the heartbeat's; every other one makes
-- one key probe of metric_samples.
create or replace function switchyard.worker_heartbeat(worker_id uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  state text := switchyard.heartbeat(worker_heartbeat.worker_id);
begin
  if not exists (select 1 from switchyard.metric_samples s
                  where s.minute = date_trunc('minute', switchyard.clock_now())) then
    begin
      perform switchyard.sample_metrics();
    exception when others then
      raise warning 'switchyard.worker_heartbeat: sample_metrics failed: % (%)', sqlerrm, sqlstate;
    end;
  end if;
  return jsonb_build_object(
    'state', state,
    'ended_runs', coalesce((
      select jsonb_agg(jsonb_build_object('run_id', r.run_id, 'status', r.status,
                                          'reason', left(r.error, 1000))
                       order by r.run_id)
        from (select distinct t.run_id from switchyard.step_tasks t
               where t.worker_id = worker_heartbeat.worker_id and t.status = 'started') held
        join switchyard.runs r on r.run_id = held.run_id
       where r.status <> 'started'), '[]'::jsonb));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/workers/worker_stopped.sql

-- Records that a worker stopped (its first reason kept), so liveness judges it stopped at once
-- instead of after its heartbeat window.
create or replace function switchyard.worker_stopped(worker_id uuid, reason text default null)
returns void
language sql
volatile
security definer
set search_path = ''
as $$
  update switchyard.workers w
     set stopped_at = coalesce(w.stopped_at, switchyard.clock_now()), stop_reason = coalesce(w.stop_reason, reason)
   where w.worker_id = worker_stopped.worker_id;
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/_cron_job.sql

-- The kit's pg_cron jobs in this database (the keep-alive, retention and the scheduler's tick):
-- what schedule_keep_alive, schedule_prune and schedule_schedules and their unschedule_* share.
-- With a command, creates or updates the job `job_name` (pg_cron updates a job of the same name
-- and user instead of adding another) and returns its id: the schedule is checked first (22023
-- schedule_missing), then pg_cron (SY020, naming `caller`, with `way_out` as the hint: where
-- pg_cron lives in another database, or what to run instead), so a bad call is refused alike on
-- every database. Without a command, removes the job and returns the id it had, or null when
-- there was none or no pg_cron. Statements on cron run through EXECUTE: the schema exists only
-- where pg_cron does.
create or replace function switchyard._cron_job(
  caller text, job_name text, schedule text default null, command text default null,
  way_out text default null
)
returns bigint
language plpgsql
volatile
set search_path = ''
as $$
declare
  job bigint;
  installed boolean := exists (select 1 from pg_catalog.pg_extension e
                                where e.extname = 'pg_cron');
begin
  if _cron_job.command is null then
    if installed then
      execute 'select j.jobid from cron.job j where j.jobname = $1' into job using job_name;
      if job is not null then
        execute 'select cron.unschedule($1)' using job_name;
      end if;
    end if;
    return job;
  end if;
  if schedule is null or trim(schedule) = '' then
    perform switchyard._refuse('22023', 'schedule_missing', 'schedule', schedule,
      format('%s: schedule is missing: use cron syntax such as ''* * * * *''', caller));
  end if;
  if not installed then
    raise exception using errcode = 'SY020', message = format(
      '%s: pg_cron is not installed in database %s', caller, to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = coalesce(way_out, 'enable pg_cron in this database');
  end if;
  execute 'select cron.schedule($1, $2, $3)' into job using job_name, schedule, command;
  return job;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/fold_metric_counters.sql

-- Folds the rows of switchyard.metric_counters
-- (docs/design/observability.md#counters-histograms-and-levels) that sessions wrote
-- into shard 0, one row per figure, label set and bucket, keeping every sum: a counter never
-- goes down and the table stays as small as the label sets times the sessions writing now.
-- A row a session holds (its transaction has not committed) is skipped, left for the next
-- fold; a session that writes a folded row again inserts it anew. Rows of shard 0 are written
-- in key order, so two folds at once queue, never deadlock. Called by prune; returns the rows
-- folded.
create or replace function switchyard.fold_metric_counters()
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  folded bigint;
begin
  with taken as (
    delete from switchyard.metric_counters c
     where c.ctid = any (array(select x.ctid from switchyard.metric_counters x
                                where x.shard <> 0
                                  for update skip locked))
    returning c.*
  ),
  summed as (
    select t.metric, t.queue_name, t.flow_slug, t.step_slug, t.outcome, t.bucket,
           sum(t.n) as n, sum(t.total) as total, count(*) as rows
      from taken t
     group by 1, 2, 3, 4, 5, 6
  ),
  added as (
    insert into switchyard.metric_counters as c
           (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
    select s.metric, s.queue_name, s.flow_slug, s.step_slug, s.outcome, s.bucket, 0, s.n, s.total
      from summed s
     order by 1, 2, 3, 4, 5, 6
    on conflict (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard) do update
       set n = c.n + excluded.n, total = c.total + excluded.total
  )
  select coalesce(sum(s.rows), 0) into folded from summed s;
  return folded;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/keep_alive.sql

-- Checks its arguments and the wake configuration, ticks the scheduler (run_schedules), ends
-- the waits that are due (expire_waits) and the runs past their deadline (cancel_overdue_runs),
-- takes the minute's sample of the metrics (sample_metrics),
-- each part isolated from the others, then wakes every queue function that is enabled,
-- unpaused, has no live worker and was not woken within debounce_seconds
-- (docs/design/versions.md, keep-alive): one HTTP request through pg_net to its Edge Function at
-- the base URL
-- (base_url_problem says which hosts are allowed). A live worker
-- (switchyard._worker_live) has not stopped, is not deprecated, and heart-beat within its own
-- window, or within heartbeat_window_seconds when that is larger (switchyard._heartbeat_window).
create or replace function switchyard.keep_alive(
  base_url text default null,
  debounce_seconds int default 30,
  heartbeat_window_seconds int default 15
)
returns table (function_name text, queue_name text, url text, via text, request_id bigint)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  use_net boolean := switchyard._pg_net_available();
  configured text := (select s.value from switchyard.settings s where s.name = 'functions_base_url');
  given text := nullif(keep_alive.base_url, '');
  base text := coalesce(given, configured);
  problem text := case when base is not null then switchyard.base_url_problem(base) end;
  bearer text;
  woken record;
  target text;
  req bigint;
begin
  if debounce_seconds is null or debounce_seconds < 0 then
    perform switchyard._refuse('22023', 'integer_min', 'debounce_seconds', debounce_seconds::text,
      format(
      'keep_alive: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      context => jsonb_build_object('min', 0));
  end if;
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'keep_alive: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  -- The bearer goes to this base URL only (docs/design/versions.md, keep-alive).
  if problem is not null then
    perform switchyard._refuse('22023', 'url_format',
      case when given is null then 'functions_base_url' else 'base_url' end, base, format(
      'keep_alive: base URL %s%s is invalid: %s', switchyard._clip(base),
      case when given is null then ' (setting functions_base_url)' else '' end, problem),
      context => jsonb_build_object('problem', problem));
  end if;
  if given is not null and configured is not null
     and switchyard._url_origin(given) <> switchyard._url_origin(configured) then
    perform switchyard._refuse('22023', 'bearer_host', 'base_url', given, format(
      'keep_alive: base URL %s is refused: the bearer goes only to the configured host %s '
      '(setting functions_base_url); pass no base_url, or change the setting',
      switchyard._clip(given), to_json(switchyard._url_origin(configured))::text),
      context => jsonb_build_object('configured', switchyard._url_origin(configured)));
  end if;
  base := rtrim(base, '/');
  if use_net then
    bearer := switchyard._functions_bearer();
    if bearer ~ '[[:space:][:cntrl:]]' then
      perform switchyard._refuse('22023', 'bearer_characters', null, null,
        'keep_alive: the bearer (Vault secret switchyard_functions_bearer or setting '
        'functions_bearer) contains whitespace or a control character; store it without them',
        context => jsonb_build_object('setting', 'functions_bearer',
          'vault_secret', 'switchyard_functions_bearer'));
    end if;
    if base is null then
      perform switchyard._refuse('22023', 'base_url_missing', 'base_url', null,
        'keep_alive: pg_net is installed but no base URL is configured: pass base_url or run '
        'select switchyard.set_setting(''functions_base_url'', ''https://<project-ref>.supabase.co'')',
        context => jsonb_build_object('setting', 'functions_base_url'));
    end if;
    if bearer is null then
      perform switchyard._refuse('22023', 'bearer_missing', null, null,
        'keep_alive: pg_net is installed but no bearer is configured: store the service role key '
        '(or the kit secret) in Vault as switchyard_functions_bearer, or run '
        'select switchyard.set_setting(''functions_bearer'', ''<key>'')',
        context => jsonb_build_object('setting', 'functions_bearer',
          'vault_secret', 'switchyard_functions_bearer'));
    end if;
  end if;

  -- The tick's timers, after every check of the arguments and the wake configuration (a
  -- refusal above does nothing at all), each part in a subtransaction of its own, so a failure
  -- of one never stops another nor the wakes (docs/design/waits.md): the scheduler
  -- (docs/design/schedules.md), so schedules run where only the keep-alive's pg_cron job is
  -- installed; the waits
  -- and sleeps whose time is up and the delayed starts that are due (docs/design/waits.md); run
  -- deadlines
  -- (docs/design/client.md); the minute's sample of the metrics
  -- (docs/design/observability.md#counters-histograms-and-levels). Within each part, each run is
  -- isolated too.
  begin
    perform switchyard.run_schedules();
  exception when others then
    raise warning 'switchyard.keep_alive: run_schedules failed: % (%)', sqlerrm, sqlstate;
  end;
  begin
    perform switchyard.expire_waits();
  exception when others then
    raise warning 'switchyard.keep_alive: expire_waits failed: % (%)', sqlerrm, sqlstate;
  end;
  begin
    perform switchyard.cancel_overdue_runs();
  exception when others then
    raise warning 'switchyard.keep_alive: cancel_overdue_runs failed: % (%)', sqlerrm, sqlstate;
  end;
  begin
    perform switchyard.sample_metrics();
  exception when others then
    raise warning 'switchyard.keep_alive: sample_metrics failed: % (%)', sqlerrm, sqlstate;
  end;

  for woken in
    with due as (
      select f.function_name
        from switchyard.worker_functions f
       where f.enabled
         and f.paused_at is null
         and (f.last_woken_at is null
              or f.last_woken_at <= switchyard.clock_now() - make_interval(secs => keep_alive.debounce_seconds))
         and not exists (
           select 1 from switchyard.workers w
            where w.function_name = f.function_name
              and switchyard._worker_live(
                    w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                    switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                                 keep_alive.heartbeat_window_seconds)))
       order by f.function_name
       for update of f skip locked
    )
    update switchyard.worker_functions f
       set last_woken_at = switchyard.clock_now()
      from due
     where f.function_name = due.function_name
    returning f.function_name, f.queue_name
  loop
    target := coalesce(base, '') || '/functions/v1/' || woken.function_name;
    req := null;
    if use_net then
      -- One function's request that pg_net refuses never stops the others' (it is recorded
      -- with no request id, and tried again after the debounce).
      begin
        execute 'select net.http_post(url := $1, body := $2, headers := $3)'
          into req
          using target,
                jsonb_build_object('source', 'switchyard.keep_alive', 'function', woken.function_name),
                jsonb_build_object('Content-Type', 'application/json',
                                   'Authorization', 'Bearer ' || bearer);
      exception when others then
        raise warning 'switchyard.keep_alive: waking %: % (%)', woken.function_name, sqlerrm, sqlstate;
      end;
    end if;
    insert into switchyard.wake_requests (function_name, queue_name, url, via, request_id)
    values (woken.function_name, woken.queue_name, target,
            case when use_net then 'pg_net' else 'recorded' end, req);
    function_name := woken.function_name;
    queue_name := woken.queue_name;
    url := target;
    via := case when use_net then 'pg_net' else 'recorded' end;
    request_id := req;
    return next;
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/keep_alive_command.sql

-- The SQL a keep-alive cron job runs (select switchyard.keep_alive(...)) with the base URL and
-- debounce checked first, so a bad job is refused when it is scheduled, not every minute after.
-- Useful on its own where pg_cron lives in another database.
create or replace function switchyard.keep_alive_command(
  base_url text default null,
  debounce_seconds int default 30
)
returns text
language plpgsql
stable      -- base_url_problem reads functions_hosts
security definer
set search_path = ''
as $$
declare
  problem text := case when nullif(base_url, '') is not null then switchyard.base_url_problem(base_url) end;
begin
  if problem is not null then
    perform switchyard._refuse('22023', 'url_format', 'base_url', base_url, format(
      'keep_alive_command: base URL %s is invalid: %s', switchyard._clip(base_url), problem),
      context => jsonb_build_object('problem', problem));
  end if;
  if debounce_seconds is null or debounce_seconds < 0 then
    perform switchyard._refuse('22023', 'integer_min', 'debounce_seconds', debounce_seconds::text,
      format(
      'keep_alive_command: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      context => jsonb_build_object('min', 0));
  end if;
  return format('select count(*) from switchyard.keep_alive(base_url => %s, debounce_seconds => %s)',
                coalesce(quote_literal(base_url), 'null'), debounce_seconds);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/prune.sql

-- Retention (docs/design/local-runs.md): deletes one batch of runs finished before `older_than`
-- (completed, failed or cancelled), with their tasks and events; a run whose message a worker
-- still holds is kept for a later batch.
create or replace function switchyard.prune(older_than interval, batch_size int default 1000)
returns switchyard.prune_result
language plpgsql
volatile
security definer
set search_path = ''
-- Key probes only, as on the claim path (docs/design/claim.md#planner-settings): a long prune loop
-- runs in one session, and a cached generic plan must not turn into a scan of the history.
set enable_seqscan = off
set enable_hashjoin = off
set enable_mergejoin = off
-- No JIT: with scans priced out, a statement that must still scan (the workers by heartbeat,
-- the metric counters' other shards, both small) is costed past jit_above_cost, and compiling
-- it took about 0.6 s of CPU per statement, over 1 s per call, on an idle database.
set jit = off
as $$
declare
  cutoff timestamptz;
  picked uuid[];          -- candidate runs, locked
  held uuid[] := '{}';    -- candidates left for a later call
  kept uuid[];            -- the runs this call deletes
  t_runs uuid[];          -- the candidates' tasks (parallel arrays)
  t_queues text[];
  t_messages bigint[];
  t_locked boolean[];     -- whether this call holds the task's lock
  q record;
  present bigint[];
  free bigint[];
  table_name text;
  n bigint;
  result switchyard.prune_result := row(0, 0, 0, 0, 0, 0, 0, 0);
begin
  if older_than is null or older_than < interval '1 hour' then
    perform switchyard._refuse('22023', 'interval_min', 'older_than', older_than::text, format(
      'prune: older_than %s is invalid: use an interval of at least 1 hour (a worker may '
      'claim a message up to its visibility timeout, at most 3600 s, after reading it)',
      coalesce(older_than::text, 'null')),
      context => jsonb_build_object('min', '1 hour'));
  end if;
  if batch_size is null or batch_size < 1 or batch_size > 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'batch_size', batch_size::text, format(
      'prune: batch_size %s is invalid: use an integer from 1 to 10000',
      coalesce(batch_size::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  cutoff := switchyard.clock_now() - older_than;

  -- The oldest finished runs nobody holds.
  select coalesce(array_agg(c.run_id), '{}') into picked
    from (select r.run_id from switchyard.runs r
           where r.status in ('completed', 'failed', 'cancelled')
             and coalesce(r.completed_at, r.failed_at, r.cancelled_at) < cutoff
           order by coalesce(r.completed_at, r.failed_at, r.cancelled_at)
           limit batch_size
             for update skip locked) c;

  if cardinality(picked) > 0 then
    -- Their tasks, by key (parallel arrays). A run with a task someone holds is held back.
    select coalesce(array_agg(t.run_id), '{}'), coalesce(array_agg(t.queue_name), '{}'),
           coalesce(array_agg(t.message_id), '{}'), coalesce(array_agg(l.run_id is not null), '{}')
      into t_runs, t_queues, t_messages, t_locked
      from unnest(picked) as p(run_id)
      cross join lateral (select x.run_id, x.step_slug, x.task_index, x.queue_name, x.message_id
                            from switchyard.step_tasks x where x.run_id = p.run_id) t
      left join lateral (select x.run_id from switchyard.step_tasks x
                          where x.run_id = t.run_id and x.step_slug = t.step_slug
                            and x.task_index = t.task_index
                          limit 1 for update skip locked) l on true;
    select coalesce(array_agg(distinct t.run_id), '{}') into held
      from unnest(t_runs, t_locked) as t(run_id, locked) where not t.locked;

    -- Messages still on their queue: free (nobody holds them; locked here) or held.
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from unnest(t_runs, t_queues, t_messages) as t(run_id, queue_name, message_id)
       where not t.run_id = any (held)
       group by t.queue_name order by t.queue_name
    loop
      table_name := pgmq.format_table_name(q.queue_name, 'q');
      continue when to_regclass('pgmq.' || quote_ident(table_name)) is null;
      execute format('select coalesce(array_agg(m.msg_id), ''{}'') from pgmq.%I m
                       where m.msg_id = any ($1)', table_name)
        into present using q.ids;
      continue when cardinality(present) = 0;
      execute format('select coalesce(array_agg(m.msg_id), ''{}'') from (
                        select m.msg_id from pgmq.%I m
                         where m.msg_id = any ($1) and m.vt <= switchyard.queue_clock()
                         order by m.msg_id for update skip locked) m', table_name)
        into free using present;
      select held || coalesce(array_agg(distinct t.run_id), '{}') into held
        from unnest(t_runs, t_queues, t_messages) as t(run_id, queue_name, message_id)
       where t.queue_name = q.queue_name and t.message_id = any (present)
         and not t.message_id = any (free);
    end loop;

    select coalesce(array_agg(p.run_id), '{}') into kept
      from unnest(picked) as p(run_id) where not p.run_id = any (held);
    result.held_runs := cardinality(picked) - cardinality(kept);

    -- Their messages: the stale ones still on a queue (locked above), then the archive rows.
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from unnest(t_runs, t_queues, t_messages) as t(run_id, queue_name, message_id)
       where t.run_id = any (kept)
       group by t.queue_name order by t.queue_name
    loop
      table_name := pgmq.format_table_name(q.queue_name, 'q');
      if to_regclass('pgmq.' || quote_ident(table_name)) is not null then
        execute format('with d as (delete from pgmq.%I m where m.msg_id = any ($1) returning 1)
                        select count(*) from d', table_name)
          into n using q.ids;
        result.queue_messages := result.queue_messages + n;
      end if;
      table_name := pgmq.format_table_name(q.queue_name, 'a');
      if to_regclass('pgmq.' || quote_ident(table_name)) is not null then
        execute format('with d as (delete from pgmq.%I m where m.msg_id = any ($1) returning 1)
                        select count(*) from d', table_name)
          into n using q.ids;
        result.archive_rows := result.archive_rows + n;
      end if;
    end loop;

    with d as (delete from switchyard.step_tasks t
                where t.run_id = any (kept) returning 1)
    select count(*) into result.step_tasks from d;
    with d as (delete from switchyard.step_states ss
                where ss.run_id = any (kept) returning 1)
    select count(*) into result.step_states from d;
    -- Their start keys (docs/design/flow-control.md#start-keys): a dedupe key still within its TTL
    -- outlives its run, with the expiry it has; the others go with the run.
    update switchyard.start_keys k
       set expires_at = coalesce(r.completed_at, r.failed_at, r.cancelled_at)
                        + k.ttl * interval '1 second'
      from switchyard.runs r
     where k.run_id = any (kept) and r.run_id = k.run_id and k.mode = 'dedupe'
       and coalesce(r.completed_at, r.failed_at, r.cancelled_at) + k.ttl * interval '1 second'
           > switchyard.clock_now();
    delete from switchyard.start_keys k where k.run_id = any (kept) and k.expires_at is null;
    with d as (delete from switchyard.runs r
                where r.run_id = any (kept) returning 1)
    select count(*) into result.runs from d;
  end if;

  -- Dedupe keys of pruned runs whose TTL is over.
  delete from switchyard.start_keys k
   where (k.started_as, k.key) in (select x.started_as, x.key from switchyard.start_keys x
                                    where x.expires_at <= switchyard.clock_now()
                                    order by x.expires_at
                                    limit batch_size
                                      for update skip locked);

  with d as (
    delete from switchyard.wake_requests w
     where w.wake_id in (select x.wake_id from switchyard.wake_requests x
                          where x.requested_at < cutoff
                          order by x.requested_at
                          limit batch_size
                            for update skip locked)
    returning 1)
  select count(*) into result.wake_requests from d;

  -- A worker row whose worker stopped, or has not heart-beat, since before the cutoff: not
  -- live by any window (docs/design/versions.md), and stall recovery treats a missing worker as a
  -- stopped one.
  with d as (
    delete from switchyard.workers w
     where w.worker_id in (select x.worker_id from switchyard.workers x
                            where x.last_heartbeat_at < cutoff
                              and coalesce(x.stopped_at, x.last_heartbeat_at) < cutoff
                            limit batch_size
                              for update skip locked)
    returning 1)
  select count(*) into result.workers from d;

  -- The counters' rows of other sessions fold into shard 0
  -- (docs/design/observability.md#counters-histograms-and-levels): the counters keep their
  -- sums while their table follows the sessions in use.
  perform switchyard.fold_metric_counters();
  return result;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/prune_command.sql

-- The SQL a cron job runs for retention. Useful on its own where pg_cron lives in another
-- database (cron.schedule_in_database(name, schedule, <this>, db)).
create or replace function switchyard.prune_command(
  older_than interval default '7 days',
  batch_size int default 1000
)
returns text
language plpgsql
immutable
security definer
set search_path = ''
as $$
begin
  if older_than is null or older_than < interval '1 hour' then
    perform switchyard._refuse('22023', 'interval_min', 'older_than', older_than::text, format(
      'prune_command: older_than %s is invalid: use an interval of at least 1 hour',
      coalesce(older_than::text, 'null')),
      context => jsonb_build_object('min', '1 hour'));
  end if;
  if batch_size is null or batch_size < 1 or batch_size > 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'batch_size', batch_size::text, format(
      'prune_command: batch_size %s is invalid: use an integer from 1 to 10000',
      coalesce(batch_size::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  return format('select runs from switchyard.prune(%L::interval, %s)', older_than::text, batch_size);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/recover_stalled.sql

-- Stall recovery (docs/design/claim.md#stall-recovery): a started task whose worker stopped
-- heart-beating
-- within its own window gets its attempt counted as failed and is queued again (or fails for
-- good); a stalled task of a cancelled run is cancelled instead. The run is read by its key. A
-- task of a run moved onto another version while it ran is queued on that version
-- (docs/design/rerun.md).
create or replace function switchyard.recover_stalled(queue_name text)
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  queue alias for queue_name;
  task switchyard.step_tasks;
  recovered int := 0;
  grace int := switchyard.lost_message_grace_seconds();
  new_id bigint;
begin
  for task in
    select t.* from switchyard.step_tasks t
      left join switchyard.workers w on w.worker_id = t.worker_id
     where t.queue_name = queue and t.status = 'started'
       -- The attempt's time on earlier instances (carried_ms) counts: the timeout spans them.
       and (t.started_at + make_interval(secs => t.timeout - t.carried_ms / 1000.0
                                                 + switchyard.claim_margin_seconds()) < switchyard.clock_now()
            or w.worker_id is null
            or not switchyard._worker_running(w.stopped_at, w.last_heartbeat_at,
                                              w.heartbeat_window_seconds))
     for update of t skip locked
  loop
    -- A task of a cancelled run is not run again: its message is archived, the task is
    -- cancelled like the run's queued tasks (cancel_run), and nothing of the run stays visible.
    -- The run is locked (task, then run: the order of fail_task), so a cancel cannot commit
    -- between this test and the requeue below.
    if (select r.status from switchyard.runs r where r.run_id = task.run_id for update)
         = 'cancelled' then
      update switchyard.step_tasks t
         set status = 'cancelled', worker_id = null
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform pgmq.archive(queue, task.message_id);
      recovered := recovered + 1;
      continue;
    end if;
    -- A stalled attempt is a failed attempt for the metrics (docs/design/observability.md).
    if task.attempts_count >= task.max_attempts then
      update switchyard.step_tasks t set last_failed_at = switchyard.clock_now()
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform switchyard._exhaust_task(task, format('stalled on attempt %s (worker %s stopped or timed out)',
                                                    task.attempts_count, task.worker_id));
    else
      update switchyard.step_tasks t
         set status = 'queued', worker_id = null, last_failed_at = switchyard.clock_now(),
             error = format('stalled on attempt %s; recovered', task.attempts_count)
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      perform pgmq.set_vt(queue, task.message_id, 0);
      -- A task of a run moved while it ran follows the run now (docs/design/rerun.md).
      perform switchyard._follow_run_flow(task.run_id, task.step_slug, task.task_index, 0);
    end if;
    recovered := recovered + 1;
  end loop;

  -- No key update: taking the row does not block the foreign-key checks of tasks being
  -- queued on this queue meanwhile.
  perform 1 from switchyard.queues q
   where q.queue_name = queue
     and (q.lost_checked_at is null or q.lost_checked_at <= switchyard.clock_now() - make_interval(secs => grace))
     for no key update skip locked;
  if found then
    update switchyard.queues q set lost_checked_at = switchyard.clock_now() where q.queue_name = queue;
    -- Only tasks of started runs: when a run fails, _fail_run archives its other queued tasks'
    -- messages and leaves the tasks queued, and a new message would be archived as stale and
    -- sent again every period. The run's status is read by its key
    -- (docs/design/claim.md#planner-settings).
    for task in execute format(
      'select t.* from switchyard.step_tasks t
        where t.queue_name = $1 and t.status = ''queued''
          and greatest(t.queued_at, coalesce(t.started_at, t.queued_at))
                <= switchyard.clock_now() - make_interval(secs => $2)
          and (select r.status from switchyard.runs r where r.run_id = t.run_id) = ''started''
          and not exists (select 1 from pgmq.%I m where m.msg_id = t.message_id)
        order by t.message_id
          for update of t skip locked',
      pgmq.format_table_name(queue, 'q'))
      using queue, grace
    loop
      select s into new_id from pgmq.send(
        queue,
        switchyard._task_message(
          task.run_id, task.flow_slug, task.step_slug, nullif(task.task_index, 0),
          (select r.priority from switchyard.runs r where r.run_id = task.run_id), 0,
          switchyard._concurrency_key(task.run_id, task.flow_slug, task.step_slug,
                                      task.task_index)),
        0) s;
      update switchyard.step_tasks t set message_id = new_id
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.task_index = task.task_index;
      recovered := recovered + 1;
    end loop;
  end if;
  -- Run deadlines, on the same sweep (docs/design/client.md): one probe of an index of
  -- started runs with a deadline, empty when no flow or start sets one.
  perform switchyard.cancel_overdue_runs();
  return recovered;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/sample_metrics.sql

-- Takes the minute's sample of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels) when nobody has yet:
-- per catalogued queue, its counters and lag now (switchyard._metric_sample_now) as the row of
-- switchyard.metric_samples for the minute of `now_at` (default clock_now()), the row the
-- dashboard's charts and metrics_minutes take differences of. Then deletes the samples older
-- than the charts' longest span (1440 minutes) but each queue's newest of them (the base of the
-- longest chart's first difference), and folds the counters' rows of
-- other sessions into shard 0 (fold_metric_counters), so neither table grows when prune is
-- never scheduled. Called by every worker's heartbeat (worker_heartbeat) and the keep-alive
-- tick, so a minute has its sample whenever a worker runs or the tick is scheduled; any mix is
-- safe: a minute that has a sample is one key probe, and one caller at a time samples (a
-- transaction-level advisory lock, tried, never waited for). `now_at` lets a test write the
-- samples of past minutes: at most now, at least 1440 minutes back (22023 now_at_range, as are
-- null and infinities). Returns the rows written: 0 when the minute had its sample.
create or replace function switchyard.sample_metrics(now_at timestamptz default switchyard.clock_now())
returns int
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  sampled_minute timestamptz := date_trunc('minute', sample_metrics.now_at);
  written int;
begin
  if sample_metrics.now_at is null or not isfinite(sample_metrics.now_at)
     or sample_metrics.now_at > switchyard.clock_now()
     or sample_metrics.now_at < switchyard.clock_now() - interval '1440 minutes' then
    perform switchyard._refuse('22023', 'now_at_range', 'now_at', sample_metrics.now_at::text, format(
      'sample_metrics: now_at %s is out of range: use an instant of the last 1440 minutes, not '
      'after the core''s clock (%s)', coalesce(sample_metrics.now_at::text, 'null'),
      switchyard.clock_now()),
      context => jsonb_build_object('max', switchyard.clock_now()::text,
                                    'min', (switchyard.clock_now() - interval '1440 minutes')::text));
  end if;
  if exists (select 1 from switchyard.metric_samples s where s.minute = sampled_minute) then
    return 0;
  end if;
  if not pg_try_advisory_xact_lock(hashtextextended('switchyard.sample_metrics', 0)) then
    return 0;
  end if;
  -- Looked at again under the lock, in a statement of its own: a sampler that committed since
  -- the first look is seen now.
  if exists (select 1 from switchyard.metric_samples s where s.minute = sampled_minute) then
    return 0;
  end if;
  insert into switchyard.metric_samples as s
         (queue_name, minute, taken_at, claims, retries, failed_attempts, throttled, completions,
          task_duration, task_duration_seconds, queue_wait, lag_seconds, depth)
  select l.queue_name, sampled_minute, sample_metrics.now_at, l.claims, l.retries,
         l.failed_attempts, l.throttled, l.completions, l.task_duration,
         l.task_duration_seconds, l.queue_wait, l.lag_seconds, l.depth
    from switchyard._metric_sample_now() l
  on conflict (queue_name, minute) do nothing;
  get diagnostics written = row_count;
  -- Older than the longest chart: deleted, but each queue's newest such sample, the base of
  -- its longest chart's first difference.
  delete from switchyard.metric_samples s
   where s.minute < date_trunc('minute', switchyard.clock_now()) - interval '1440 minutes'
     and s.minute < (select max(x.minute) from switchyard.metric_samples x
                      where x.queue_name = s.queue_name
                        and x.minute < date_trunc('minute', switchyard.clock_now())
                                       - interval '1440 minutes');
  perform switchyard.fold_metric_counters();
  return written;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/schedule_keep_alive.sql

-- Creates or updates the pg_cron job 'switchyard_keep_alive' in this database and
-- returns its job id. pg_cron accepts cron syntax ('* * * * *', every minute) and,
-- from pg_cron 1.5, intervals such as '30 seconds'.
create or replace function switchyard.schedule_keep_alive(
  schedule text default '* * * * *',
  base_url text default null,
  debounce_seconds int default 30
)
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('schedule_keep_alive', 'switchyard_keep_alive', schedule,
    switchyard.keep_alive_command(base_url, debounce_seconds),
    way_out => 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in '
               'the database named by cron.database_name: there run select '
               'cron.schedule_in_database(''switchyard_keep_alive'', ''* * * * *'', '
               '<switchyard.keep_alive_command()>, <this database>)');
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/schedule_prune.sql

-- Creates or updates the pg_cron job 'switchyard_prune' in this database and returns its
-- job id. Each run removes one batch; the default (every minute, 1000 runs) keeps up with
-- up to 1.4 million finished runs a day.
create or replace function switchyard.schedule_prune(
  older_than interval default '7 days',
  schedule text default '* * * * *',
  batch_size int default 1000
)
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('schedule_prune', 'switchyard_prune', schedule,
    switchyard.prune_command(older_than, batch_size),
    way_out => 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in '
               'the database named by cron.database_name: there run select '
               'cron.schedule_in_database(''switchyard_prune'', ''* * * * *'', '
               '<switchyard.prune_command()>, <this database>)');
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/unschedule_keep_alive.sql

-- Removes the keep-alive job; false when there was none.
create or replace function switchyard.unschedule_keep_alive()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('unschedule_keep_alive', 'switchyard_keep_alive') is not null;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/unschedule_prune.sql

-- Removes the retention job; false when there was none.
create or replace function switchyard.unschedule_prune()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  return switchyard._cron_job('unschedule_prune', 'switchyard_prune') is not null;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/maintenance/wake_failures.sql

-- The keep-alive's wakes whose HTTP answer was an error, per function, over the last
-- since_seconds, default 6 hours (docs/design/versions.md, keep-alive): a request pg_net refused
-- (recorded with no request id), or pg_net's response (net._http_response, joined by request id)
-- with a status of 400 or more, a timeout or an error message. pg_net keeps responses for 6 hours
-- by default, so older wakes are unknown, not failed; a wake whose response has not arrived is
-- neither. With each function: how many failed, the latest failure (its time, status and error,
-- cut at 300 characters) and the latest wake answered without error. Without pg_net's table only
-- refused requests count.
create or replace function switchyard.wake_failures(since_seconds int default 21600)
returns table (
  function_name text, failures bigint, last_failed_at timestamptz, last_status int,
  last_error text, last_ok_at timestamptz
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  responses text := case when to_regclass('net._http_response') is not null
                         then 'net._http_response' end;
begin
  if since_seconds is null or since_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'since_seconds', since_seconds::text, format(
      'wake_failures: since_seconds %s is invalid: use an integer of at least 1',
      coalesce(since_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  return query execute format($q$
    with wakes as (
      select w.function_name, w.requested_at,
             r.status_code,
             case
               when w.request_id is null then 'pg_net refused the request'
               when r.status_code >= 400 then
                 format('HTTP %%s: %%s', r.status_code, left(coalesce(r.content, ''), 300))
               when r.timed_out then 'timed out'
               when r.error_msg is not null then left(r.error_msg, 300)
             end as error,
             (r.status_code < 400 and r.error_msg is null and not coalesce(r.timed_out, false))
               as ok
        from switchyard.wake_requests w
        left join %s r on r.id = w.request_id
       where w.via = 'pg_net' and w.requested_at >= switchyard.clock_now() - make_interval(secs => $1)
    )
    select w.function_name,
           count(*) filter (where w.error is not null),
           max(w.requested_at) filter (where w.error is not null),
           (array_agg(w.status_code order by w.requested_at desc)
              filter (where w.error is not null))[1],
           (array_agg(w.error order by w.requested_at desc) filter (where w.error is not null))[1],
           max(w.requested_at) filter (where w.ok)
      from wakes w
     group by w.function_name
    having count(*) filter (where w.error is not null) > 0
     order by w.function_name$q$,
    coalesce(responses,
             '(select null::bigint as id, null::int as status_code, null::text as content, '
             'null::boolean as timed_out, null::text as error_msg)'))
    using since_seconds;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/_metric_sample_now.sql

-- Every catalogued queue's sample of the metrics now
-- (docs/design/observability.md#counters-histograms-and-levels), the row
-- switchyard.sample_metrics stores per minute and the charts' current minute ends with: its
-- counters of switchyard.metric_counters summed over flows, steps and shards (completions are
-- task_duration's count), the histograms' counts per bucket, and the lag of
-- switchyard.metric_levels (the gauge switchyard_queue_lag_seconds) with the depth. One read of
-- the counters (they follow the label sets and sessions, never the history) and of PGMQ's queue
-- tables (O(depth)), as a scrape reads them.
create or replace function switchyard._metric_sample_now()
returns table (
  queue_name text, claims bigint, retries bigint, failed_attempts bigint, throttled bigint,
  completions bigint, task_duration bigint[], task_duration_seconds double precision,
  queue_wait bigint[], lag_seconds double precision, depth bigint
)
language plpgsql
stable
set search_path = ''
as $$
begin
  return query
    with c as materialized (
      select x.queue_name, x.metric, x.bucket, sum(x.n)::bigint as n, sum(x.total) as total
        from switchyard.metric_counters x
       where x.metric in ('claims', 'retries', 'failed_attempts', 'throttled', 'task_duration',
                          'queue_wait')
       group by x.queue_name, x.metric, x.bucket
    ),
    levels as materialized (
      select l.queue_name, l.gauge, l.value from switchyard.metric_levels() l
       where l.gauge in ('queue_oldest_visible_age_seconds', 'queue_depth')
    )
    select q.queue_name,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'claims'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'retries'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'failed_attempts'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'throttled'), 0)::bigint,
           coalesce((select sum(c.n) from c where c.queue_name = q.queue_name
                                              and c.metric = 'task_duration'), 0)::bigint,
           array(select coalesce(c.n, 0) from generate_series(1, 17) b(i)
                   left join c on c.queue_name = q.queue_name and c.metric = 'task_duration'
                              and c.bucket = b.i
                  order by b.i),
           coalesce((select sum(c.total) from c where c.queue_name = q.queue_name
                                                  and c.metric = 'task_duration'), 0)::double precision,
           array(select coalesce(c.n, 0) from generate_series(1, 17) b(i)
                   left join c on c.queue_name = q.queue_name and c.metric = 'queue_wait'
                              and c.bucket = b.i
                  order by b.i),
           coalesce((select l.value from levels l where l.queue_name = q.queue_name
                                                    and l.gauge = 'queue_oldest_visible_age_seconds'), 0),
           coalesce((select l.value from levels l where l.queue_name = q.queue_name
                                                    and l.gauge = 'queue_depth'), 0)::bigint
      from switchyard.queues q
     order by q.queue_name;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_batches.sql

-- The dashboard's open batches section (docs/design/batching.md): per open batch the name its
-- events started (the alias or slug), its key, the run it becomes, its events so far and its
-- maxSize, when it opened, when it is due (close_at = opened_at + timeout: the tick closes it
-- then), whether it is overdue at `now_at` (the tick has not closed it yet; a test passes a time
-- ahead of the clock, as to close_batches) and the last error of a close that failed. The most
-- overdue first (the earliest due), then the oldest; at most 100 rows, read in the order of the
-- index batches_close_at, so a database with many open batches or none reads at most 100.
create or replace function switchyard.dashboard_batches(
  now_at timestamptz default switchyard.clock_now()
)
returns table (
  started_as text, batch_key text, run_id uuid, size int, max_size int, opened_at timestamptz,
  due_at timestamptz, overdue boolean, last_error text
)
language sql
stable
security definer
set search_path = ''
as $$
  select b.started_as, b.batch_key, b.run_id, b.size, b.max_size, b.opened_at, b.close_at,
         b.close_at <= coalesce(now_at, switchyard.clock_now()), b.last_error
    from switchyard.batches b
   order by b.close_at, b.opened_at, b.batch_id
   limit 100
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_metrics_history.sql

-- The dashboard's charts (docs/design/observability.md): per queue and minute over the last
-- `minutes` (1-1440, default 60), the current minute last, every minute present, read from the
-- counters through their per-minute samples (switchyard.metric_samples, written by
-- sample_metrics), so a chart shows what /metrics and the Grafana views serve:
--   lag_seconds  the queue's lag (how long its oldest visible message had been visible, the
--                gauge switchyard_queue_lag_seconds) at the minute's end: the sample of the next
--                minute, now for the current minute; null when no sample ends the minute;
--   p95_ms       the 95th percentile of the task durations completed in the minute,
--                metric_quantile (histogram_quantile) of the task_duration buckets' difference;
--                null when none completed;
--   failures     failed attempts in the minute (the failed_attempts counter's difference);
--   completions  tasks completed in the minute (task_duration's count's difference).
-- A minute's figures are the difference of the sample ending it (the next minute's; for the
-- current minute the counters now) and the sample before that one, however far back (none: the
-- counters started at zero): a minute nobody sampled shows 0 and the minute whose end was
-- sampled next carries its work, so the figures of a span add up to the counters' increase
-- over it, and to the counters themselves while the span reaches the queue's first sample. No
-- task row is read.
create or replace function switchyard.dashboard_metrics_history(minutes int default 60)
returns table (
  queue_name text, minute timestamptz, lag_seconds double precision, p95_ms double precision,
  failures int, completions int
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  this_minute timestamptz := date_trunc('minute', switchyard.clock_now());
  first_minute timestamptz := this_minute
    - make_interval(mins => least(greatest(coalesce(dashboard_metrics_history.minutes, 60), 1), 1440) - 1);
begin
  return query
    with points as (
      -- Each point ends the minute before its own: the samples of the span's minutes after
      -- the first, the counters now (ending the current minute), and, as the base of the first
      -- difference, each queue's last sample at or before the first minute.
      select s.queue_name, s.minute, s.failed_attempts, s.completions, s.task_duration,
             s.lag_seconds
        from switchyard.metric_samples s
       where s.minute > first_minute and s.minute <= this_minute
      union all
      select l.queue_name, this_minute + interval '1 minute', l.failed_attempts, l.completions,
             l.task_duration, l.lag_seconds
        from switchyard._metric_sample_now() l
      union all
      select b.queue_name, b.minute, b.failed_attempts, b.completions, b.task_duration,
             b.lag_seconds
        from switchyard.queues x
        cross join lateral (select s.queue_name, s.minute, s.failed_attempts, s.completions,
                                   s.task_duration, s.lag_seconds
                              from switchyard.metric_samples s
                             where s.queue_name = x.queue_name and s.minute <= first_minute
                             order by s.minute desc limit 1) b
    ),
    paired as (
      select p.queue_name, p.minute - interval '1 minute' as minute, p.lag_seconds,
             p.failed_attempts, p.completions, p.task_duration,
             -- A queue's first sample ever is based on zero: the counters start at zero.
             lag(p.failed_attempts, 1, 0::bigint) over w as failed_before,
             lag(p.completions, 1, 0::bigint) over w as completions_before,
             lag(p.task_duration, 1, array_fill(0::bigint, array[17])) over w as duration_before
        from points p
      window w as (partition by p.queue_name order by p.minute)
    ),
    -- A counter that went down was reset (as Prometheus reads it): its difference is its value.
    diffs as (
      select d.queue_name, d.minute, d.lag_seconds,
             case when d.failed_attempts >= d.failed_before then d.failed_attempts - d.failed_before
                  else d.failed_attempts end as failures,
             case when d.completions >= d.completions_before
                  then d.completions - d.completions_before else d.completions end as completions,
             case when d.completions >= d.completions_before
                  then array(select greatest(e.n - e.b, 0)
                               from unnest(d.task_duration, d.duration_before) as e(n, b))
                  else d.task_duration end as buckets
        from paired d
       where d.minute >= first_minute
    )
    select x.queue_name, m.minute, d.lag_seconds,
           case when d.buckets is not null
                then switchyard.metric_quantile(0.95, d.buckets) * 1000 end,
           coalesce(d.failures, 0)::int, coalesce(d.completions, 0)::int
      from switchyard.queues x
      cross join lateral generate_series(first_minute, this_minute, interval '1 minute') as m(minute)
      left join diffs d on d.queue_name = x.queue_name and d.minute = m.minute
     order by x.queue_name, m.minute;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_queues.sql

-- Every catalogued queue with its depth, read from PGMQ's queue table (the documented
-- layout the contract suite checks; docs/design/claim.md#hiding-claimed-messages): messages visible
-- now,
-- hidden (read or claimed, or waiting for a retry's delay), and the oldest one's age.
create or replace function switchyard.dashboard_queues()
returns table (
  queue_name text, pgmq_name text, ownership text, owner_flow text,
  visible bigint, hidden bigint, oldest_enqueued_at timestamptz
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  tbl text;
begin
  for q in
    select x.queue_name, x.pgmq_name, x.ownership, x.owner_flow
      from switchyard.queues x order by x.queue_name
  loop
    queue_name := q.queue_name;
    pgmq_name := q.pgmq_name;
    ownership := q.ownership;
    owner_flow := q.owner_flow;
    visible := null;
    hidden := null;
    oldest_enqueued_at := null;
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'select count(*) filter (where vt <= switchyard.queue_clock()),
                count(*) filter (where vt > switchyard.queue_clock()), min(enqueued_at)
           from pgmq.%I', tbl)
        into visible, hidden, oldest_enqueued_at;
    end if;
    return next;
  end loop;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_row_triggers.sql

-- The dashboard's row triggers section (docs/design/origins.md, docs/design/ingestion.md): every
-- declaration as list_row_triggers answers it (table, alias, events, whether its trigger is in
-- place, its backfill's state, cursor and counts), with the runs it started in the last hour:
-- the runs with an origin naming it (row_trigger or backfill), counted through the partial
-- index runs_origin_started, which holds only runs with an origin. PL/pgSQL, so it may be
-- created before _row_trigger_json, which takes the table's row type.
create or replace function switchyard.dashboard_row_triggers()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return (
    with recent as (
      select r.origin ->> 'trigger' as name, count(*) as runs
        from switchyard.runs r
       where r.origin is not null
         and r.started_at > switchyard.clock_now() - interval '1 hour'
         and r.origin ->> 'kind' in ('row_trigger', 'backfill')
       group by 1)
    select coalesce(jsonb_agg(switchyard._row_trigger_json(d)
                                || jsonb_build_object('runs_last_hour', coalesce(c.runs, 0))
                              order by d.name), '[]'::jsonb)
      from switchyard.row_triggers d
      left join recent c on c.name = d.name);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_run_lineage.sql

-- What the dashboard's runs table shows of the run controls (docs/design/rerun.md) for
-- these runs: lineage (the run a fork was made from, and the step it was forked from), the pause
-- (when and why), and the concrete versions of the run's alias other than its own, the targets a
-- move or a fork may name (the SQL core still proves each one when asked). Runs with none of it
-- are absent. One probe of the run row and one of its alias per run.
create or replace function switchyard.dashboard_run_lineage(run_ids uuid[])
returns table (
  run_id uuid, forked_from uuid, from_step text, paused_at timestamptz, pause_reason text,
  versions text[]
)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.forked_from, r.from_step, r.paused_at, r.pause_reason, v.versions
    from switchyard.runs r
    cross join lateral (
      select coalesce(array_agg(o.flow_slug order by o.flow_slug), '{}') as versions
        from switchyard.alias_members m
        join switchyard.alias_members o on o.alias = m.alias and o.flow_slug <> m.flow_slug
       where m.flow_slug = r.flow_slug
    ) v
   where r.run_id = any (run_ids)
     and (r.forked_from is not null or r.paused_at is not null or cardinality(v.versions) > 0)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_run_origins.sql

-- Where these runs came from (docs/design/origins.md), for the dashboard's runs table and run
-- detail: each run's origin (a row trigger, a backfill, a webhook, a batch). Runs started plainly
-- (no origin) are absent. One probe of the run's row per run.
create or replace function switchyard.dashboard_run_origins(run_ids uuid[])
returns table (run_id uuid, origin jsonb)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.origin
    from switchyard.runs r
   where r.run_id = any (run_ids) and r.origin is not null
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_runs.sql

-- Recent runs, newest first (at most 200), optionally of one status, of flows with a step on
-- one queue, or one run. Each with its duration (so far, for a started run), its error and
-- failing step, and its steps in step order with their task's queue snapshot, attempts and
-- times: queued (the step became ready), started (the latest attempt), finished. A map step
-- (docs/design/runs.md#map-steps) has one task per element: its row sums them up (the most
-- attempts any element used, the first error in element order, `tasks` the element count).
create or replace function switchyard.dashboard_runs(
  max_runs int default 25, run_status text default null, queue_name text default null,
  run_id uuid default null
)
returns table (
  run_id uuid, flow_slug text, started_as text, status text, started_at timestamptz,
  finished_at timestamptz, duration_ms bigint, error text, failed_step text, steps jsonb
)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.flow_slug, r.started_as, r.status, r.started_at,
         coalesce(r.completed_at, r.failed_at, r.cancelled_at),
         (extract(epoch from coalesce(r.completed_at, r.failed_at, r.cancelled_at, switchyard.clock_now()) - r.started_at)
           * 1000)::bigint,
         r.error,
         (select ss.step_slug from switchyard.step_states ss
           where ss.run_id = r.run_id and ss.status = 'failed'
           order by ss.failed_at nulls last, ss.step_slug limit 1),
         (select coalesce(jsonb_agg(jsonb_build_object(
                   'step_slug', ss.step_slug, 'step_index', st.step_index, 'status', ss.status,
                   'queue_name', coalesce(t.queue_name, st.queue_name),
                   'attempts', coalesce(t.attempts_count, 0),
                   'max_attempts', coalesce(t.max_attempts, st.max_attempts),
                   'queued_at', t.queued_at, 'started_at', t.started_at,
                   'finished_at', coalesce(ss.completed_at, ss.failed_at, ss.skipped_at,
                                           t.completed_at, t.failed_at),
                   'error', t.error, 'tasks', t.tasks,
                   -- A wait, sleep or flow step (docs/design/waits.md): its kind, and
                   -- when its timeout is due while it waits.
                   'kind', st.step_type,
                   'wait_deadline', case when ss.status = 'started' then ss.wait_deadline end)
                 order by st.step_index), '[]'::jsonb)
            from switchyard.step_states ss
            join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
            left join lateral (
              select min(x.queue_name) as queue_name, max(x.attempts_count) as attempts_count,
                     max(x.max_attempts) as max_attempts, min(x.queued_at) as queued_at,
                     max(x.started_at) as started_at, max(x.completed_at) as completed_at,
                     max(x.failed_at) as failed_at, count(*)::int as tasks,
                     (array_agg(x.error order by x.task_index)
                        filter (where x.error is not null))[1] as error
                from switchyard.step_tasks x
               where x.run_id = ss.run_id and x.step_slug = ss.step_slug
            ) t on true
           where ss.run_id = r.run_id)
    from switchyard.runs r
   where (dashboard_runs.run_id is null or r.run_id = dashboard_runs.run_id)
     and (dashboard_runs.run_status is null or r.status = dashboard_runs.run_status)
     and (dashboard_runs.queue_name is null or exists (
           select 1 from switchyard.steps st
            where st.flow_slug = r.flow_slug and st.queue_name = dashboard_runs.queue_name))
   order by r.started_at desc, r.run_id
   limit least(greatest(coalesce(dashboard_runs.max_runs, 25), 1), 200)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/dashboard_throughput.sql

-- Completed tasks per queue and minute over the last `minutes` minutes (1-1440, default 60),
-- the current minute last, every minute present (0 when none): the completions of the charts
-- (dashboard_metrics_history), differences of the counters' per-minute samples
-- (docs/design/observability.md#counters-histograms-and-levels), so the
-- dashboard's completed-tasks chart shows what /metrics' switchyard_task_completions_total
-- counts. No task row and no archive is read.
create or replace function switchyard.dashboard_throughput(minutes int default 60)
returns table (queue_name text, minute timestamptz, completed int)
language sql
stable
security definer
set search_path = ''
as $$
  select h.queue_name, h.minute, h.completions
    from switchyard.dashboard_metrics_history(dashboard_throughput.minutes) h
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/metric_levels.sql

-- The levels of the metrics (docs/design/observability.md#counters-histograms-and-levels), gauges
-- of what is true now, one row
-- each (the view switchyard.metrics_gauges):
--
--   queue_depth                 {queue}            messages visible now
--   queue_hidden                {queue}            messages hidden now (claimed, or delayed)
--   queue_oldest_visible_age_seconds {queue}       how long the oldest visible message has been
--                                                  visible (0: none)
--   queue_oldest_age_seconds    {queue}            the oldest message's age, visible or not
--   workers_live                {queue, function}  the function's live workers
--   function_paused             {queue, function}  1 when the function is paused, else 0
--   runs_active                 {flow, version}    started runs
--   runs_waiting                {flow, version}    started runs with a wait, sleep or flow step
--                                                  waiting
--   waits_overdue               {flow, version}    waiting steps past their timeout (expire_waits
--                                                  has not ended them)
--
-- PGMQ's queue tables are read as dashboard_queues reads them (O(depth)); runs from the started
-- ones (runs_flow_started) and waits by deadline (step_states_wait_due): the cost follows
-- the work in flight, never the history.
create or replace function switchyard.metric_levels()
returns table (
  gauge text, queue_name text, function_name text, flow text, version text,
  value double precision
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  q record;
  tbl text;
  depth bigint;
  hidden bigint;
  oldest_visible timestamptz;
  oldest timestamptz;
begin
  for q in select x.queue_name, x.pgmq_name from switchyard.queues x order by x.queue_name loop
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    continue when to_regclass(format('pgmq.%I', tbl)) is null;
    execute format(
      'select count(*) filter (where vt <= switchyard.queue_now()),
              count(*) filter (where vt > switchyard.queue_now()),
              min(vt) filter (where vt <= switchyard.queue_now()), min(enqueued_at)
         from pgmq.%I', tbl)
      into depth, hidden, oldest_visible, oldest;
    return query values
      ('queue_depth', q.queue_name, '', '', '', depth::double precision),
      ('queue_hidden', q.queue_name, '', '', '', hidden::double precision),
      ('queue_oldest_visible_age_seconds', q.queue_name, '', '', '',
       coalesce(greatest(extract(epoch from switchyard.queue_now() - oldest_visible), 0), 0)::double precision),
      ('queue_oldest_age_seconds', q.queue_name, '', '', '',
       coalesce(greatest(extract(epoch from switchyard.queue_now() - oldest), 0), 0)::double precision);
  end loop;
  return query
    select 'workers_live', f.queue_name, f.function_name, '', '',
           (select count(*) from switchyard.workers w
             where w.function_name = f.function_name and w.queue_name = f.queue_name
               and w.stopped_at is null
               and switchyard._worker_live(w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                                           w.heartbeat_window_seconds))::double precision
      from switchyard.worker_functions f
    union all
    select 'function_paused', f.queue_name, f.function_name, '', '',
           (f.paused_at is not null)::int::double precision
      from switchyard.worker_functions f;
  return query
    select g.gauge, '', '', coalesce(am.alias, g.flow_slug), g.flow_slug, g.value
      from (select 'runs_active' as gauge, r.flow_slug, count(*)::double precision as value
              from switchyard.runs r where r.status = 'started' group by r.flow_slug
            union all
            -- One primary-key probe per (started run, waiting kind of step), as
            -- open_run_steps: no plan can join by scanning every state ever recorded.
            select 'runs_waiting', r.flow_slug, count(*)::double precision
              from switchyard.runs r
             where r.status = 'started'
               and exists (select 1 from switchyard.steps st
                            cross join lateral (select ss.status from switchyard.step_states ss
                                                 where ss.run_id = r.run_id
                                                   and ss.step_slug = st.step_slug
                                                 limit 1) ss
                            where st.flow_slug = r.flow_slug
                              and st.step_type in ('wait', 'sleep', 'flow')
                              and ss.status = 'started')
             group by r.flow_slug
            union all
            select 'waits_overdue', ss.flow_slug, count(*)::double precision
              from switchyard.step_states ss
             where ss.status = 'started' and ss.wait_due is not null
               and ss.wait_due < switchyard.clock_now()
             group by ss.flow_slug) g
      left join switchyard.alias_members am on am.flow_slug = g.flow_slug;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/metric_snapshot.sql

-- The counters, histograms and levels of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels) in one JSON
-- document, from one snapshot (a stable function's statements share its caller's), so every
-- scrape from any instance reads the same figures: { "counters": [...], "histograms": [...],
-- "gauges": [...] }, the rows of the views metrics_counters, metrics_histograms and
-- metrics_gauges (plpgsql: the views come after the functions). Its cost follows the label sets and the work in flight, never the history.
create or replace function switchyard.metric_snapshot()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'counters', coalesce((select jsonb_agg(to_jsonb(c) order by c.metric, c.queue_name,
                            c.function_name, c.flow, c.version, c.step, c.outcome)
                            from switchyard.metrics_counters c), '[]'::jsonb),
    'histograms', coalesce((select jsonb_agg(to_jsonb(h) order by h.metric, h.queue_name,
                              h.flow, h.version, h.step, h.outcome, h.bucket)
                              from switchyard.metrics_histograms h), '[]'::jsonb),
    'gauges', coalesce((select jsonb_agg(to_jsonb(g) order by g.gauge, g.queue_name,
                          g.function_name, g.flow, g.version)
                          from switchyard.metrics_gauges g), '[]'::jsonb));
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/dashboard/metrics.sql

-- The metrics of every queue and step (docs/design/observability.md) over the last `window_seconds`
-- (1 to 86400, default 60), as one JSON document:
--
--   { "at", "window_seconds",
--     "queues": [{ queue_name, functions, depth, hidden, lag_seconds, oldest_age_seconds,
--                  claims, completions, failures, retries, and the first three per second }],
--     "steps":  [{ queue_name, flow_slug, step_slug, claims, completions, failures, retries,
--                  p50_ms, p95_ms, p99_ms, attempts_avg, attempts_max }] }
--
-- depth is the messages visible now, hidden the others (claimed, or waiting for a delay);
-- lag_seconds how long the oldest visible message has been visible (0 when none), and
-- oldest_age_seconds the age of the oldest message, from PGMQ's queue table (O(depth), as
-- dashboard_queues). The counts come from the tasks touched in the window, read through the
-- index step_tasks_recent, and from the failed attempts of the window, read through
-- failed_attempts_recent, so their cost grows with the window's activity, never with the
-- history: claims are the tasks whose latest claim is in the window, retries those of them
-- claimed again after a failed attempt, completions the tasks completed, failures the failed
-- attempts (a throw, a timeout, a stall; retried or not) in it: a task that failed five times
-- in the window counts five (a retry storm shows), while a task claimed twice in one window
-- counts once among the claims. Durations are a completed task's last
-- attempt, from its claim to its completion; attempts those of the tasks that finished
-- (completed, or failed for good) in the window. A step or queue with no activity in the window
-- has no step rows and zero counts.
create or replace function switchyard.metrics(window_seconds int default 60)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  since timestamptz;
  q record;
  tbl text;
  depth bigint;
  hidden bigint;
  oldest_visible timestamptz;
  oldest timestamptz;
  steps jsonb;
  queues jsonb := '[]'::jsonb;
begin
  if window_seconds is null or window_seconds < 1 or window_seconds > 86400 then
    perform switchyard._refuse('22023', 'window_range', 'window_seconds', window_seconds::text,
      format(
      'metrics: window_seconds %s is out of range: use 1 to 86400 (one day)',
      coalesce(window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 86400));
  end if;
  since := switchyard.clock_now() - make_interval(secs => window_seconds);
  -- One sort per step for the three percentiles (percentile_cont over an array of fractions).
  select coalesce(jsonb_agg(jsonb_build_object(
           'queue_name', s.queue_name, 'flow_slug', s.flow_slug, 'step_slug', s.step_slug,
           'claims', s.claims, 'completions', s.completions, 'failures', coalesce(f.n, 0),
           'retries', s.retries, 'p50_ms', s.p[1], 'p95_ms', s.p[2], 'p99_ms', s.p[3],
           'attempts_avg', s.attempts_avg, 'attempts_max', s.attempts_max)
           order by s.queue_name, s.flow_slug, s.step_slug), '[]'::jsonb)
    into steps
    from (
      select t.queue_name, t.flow_slug, t.step_slug,
             count(*) filter (where t.started_at >= since) as claims,
             count(*) filter (where t.completed_at >= since) as completions,
             count(*) filter (where t.started_at >= since and t.attempts_count > 1) as retries,
             percentile_cont(array[0.5, 0.95, 0.99]) within group (order by extract(epoch from
               t.completed_at - t.started_at) * 1000) filter (where t.completed_at >= since)
               as p,
             (avg(t.attempts_count) filter (where t.completed_at >= since
               or (t.status = 'failed' and t.last_failed_at >= since)))::double precision
               as attempts_avg,
             max(t.attempts_count) filter (where t.completed_at >= since
               or (t.status = 'failed' and t.last_failed_at >= since)) as attempts_max
        from switchyard.step_tasks t
       where t.started_at is not null
         and greatest(t.started_at, t.completed_at, t.last_failed_at) >= since
       group by t.queue_name, t.flow_slug, t.step_slug
    ) s
    -- A step with a failed attempt in the window has a task whose last failure is in it: a row
    -- of s.
    left join (
      select fa.queue_name, fa.flow_slug, fa.step_slug, count(*) as n
        from switchyard.failed_attempts fa
       where fa.failed_at >= since
       group by fa.queue_name, fa.flow_slug, fa.step_slug
    ) f on f.queue_name = s.queue_name and f.flow_slug = s.flow_slug
       and f.step_slug = s.step_slug;
  for q in
    select x.queue_name, x.pgmq_name,
           coalesce((select jsonb_agg(f.function_name order by f.function_name)
                       from switchyard.worker_functions f where f.queue_name = x.queue_name),
                    '[]'::jsonb) as functions,
           coalesce(sum((s.value ->> 'claims')::bigint), 0) as claims,
           coalesce(sum((s.value ->> 'completions')::bigint), 0) as completions,
           coalesce(sum((s.value ->> 'failures')::bigint), 0) as failures,
           coalesce(sum((s.value ->> 'retries')::bigint), 0) as retries
      from switchyard.queues x
      left join jsonb_array_elements(steps) s on s.value ->> 'queue_name' = x.queue_name
     group by x.queue_name, x.pgmq_name
     order by x.queue_name
  loop
    depth := null;
    hidden := null;
    oldest_visible := null;
    oldest := null;
    tbl := pgmq.format_table_name(q.pgmq_name, 'q');
    if to_regclass(format('pgmq.%I', tbl)) is not null then
      execute format(
        'select count(*) filter (where vt <= switchyard.queue_now()), count(*) filter (where vt > switchyard.queue_now()),
                min(vt) filter (where vt <= switchyard.queue_now()), min(enqueued_at)
           from pgmq.%I', tbl)
        into depth, hidden, oldest_visible, oldest;
    end if;
    queues := queues || jsonb_build_object(
      'queue_name', q.queue_name, 'functions', q.functions,
      'depth', depth, 'hidden', hidden,
      'lag_seconds', coalesce(greatest(extract(epoch from switchyard.queue_now() - oldest_visible), 0), 0),
      'oldest_age_seconds', coalesce(extract(epoch from switchyard.queue_now() - oldest), 0),
      'claims', q.claims, 'completions', q.completions, 'failures', q.failures,
      'retries', q.retries,
      'claims_per_second', q.claims::double precision / window_seconds,
      'completions_per_second', q.completions::double precision / window_seconds,
      'failures_per_second', q.failures::double precision / window_seconds);
  end loop;
  return jsonb_build_object('at', switchyard.clock_now(), 'window_seconds', window_seconds, 'queues', queues,
                            'steps', steps);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/runs/_fail_run.sql

-- Final failure: the task, its step and its run fail, and the run's queued messages are
-- archived. A step of a cancelled run stays cancelled, and the run too (only a started run
-- fails). The run is locked by its key and its status tested in code
-- (docs/design/claim.md#planner-settings).
create or replace function switchyard._fail_run(task switchyard.step_tasks, error_text text)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  run_status text;
begin
  update switchyard.step_tasks t
     set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
   where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
  perform pgmq.archive(task.queue_name, task.message_id);
  update switchyard.step_states ss
     set status = 'failed', failed_at = switchyard.clock_now(), wait_due = null
   where ss.run_id = task.run_id and ss.step_slug = task.step_slug and ss.status <> 'cancelled';
  -- The run by key (locked), then its status: a status condition in the update let a plan
  -- made with stale statistics read every started run through runs_flow_started
  -- (docs/design/claim.md#planner-settings).
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if run_status = 'started' then
    update switchyard.runs r
       set status = 'failed', failed_at = switchyard.clock_now(),
           error = format('step %s failed after %s attempt(s): %s', task.step_slug, task.attempts_count, error_text)
     where r.run_id = task.run_id;
  end if;
  -- The run's other queued messages (a map step: its other elements), by key and filtered
  -- afterwards, one archive per queue (_archive_queued).
  perform switchyard._archive_queued(task.run_id);
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/completion/_exhaust_task.sql

-- A task that used its last attempt: with the step's whenExhausted 'skip' or
-- 'skip-cascade' and the run still started, the task fails, the step is skipped (with
-- 'skip-cascade' its dependents too) and the run goes on without them ('skipped'); with
-- 'pause' and the run still started, the task fails, its step stays started and the run pauses
-- for an operator (_pause_run; resume_run queues the task again: 'paused'); else the run fails
-- ('failed').
create or replace function switchyard._exhaust_task(task switchyard.step_tasks, error_text text)
returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  exhausted text;
  run_status text;
  q record;
begin
  select st.when_exhausted into exhausted from switchyard.steps st
   where st.flow_slug = task.flow_slug and st.step_slug = task.step_slug;
  select r.status into run_status from switchyard.runs r where r.run_id = task.run_id for update;
  if exhausted in ('skip', 'skip-cascade') and run_status = 'started' then
    update switchyard.step_tasks t
       set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    -- A map step's other elements are skipped with it: their messages are archived and a
    -- late answer from one still running is not accepted (its task is no longer started).
    for q in
      select t.queue_name, array_agg(t.message_id order by t.message_id) as ids
        from switchyard.step_tasks t
       where t.run_id = task.run_id and t.step_slug = task.step_slug
         and t.status in ('queued', 'started')
       group by t.queue_name order by t.queue_name
    loop
      perform pgmq.archive(q.queue_name, q.ids);
    end loop;
    update switchyard.step_tasks t
       set status = 'skipped'
     where t.run_id = task.run_id and t.step_slug = task.step_slug
       and t.status in ('queued', 'started');
    -- 'skip-cascade': every step that depends on it, transitively, is skipped too.
    perform switchyard._skip_step(task.run_id, task.flow_slug, task.step_slug, format(
      'whenExhausted %s: failed after %s attempt(s): %s', exhausted, task.attempts_count,
      error_text), exhausted = 'skip-cascade');
    perform switchyard._start_ready_steps(task.run_id);
    perform switchyard._complete_run_if_done(task.run_id);
    return 'skipped';
  end if;
  if exhausted = 'pause' and run_status = 'started' then
    update switchyard.step_tasks t
       set status = 'failed', failed_at = switchyard.clock_now(), error = error_text
     where t.run_id = task.run_id and t.step_slug = task.step_slug and t.task_index = task.task_index;
    perform pgmq.archive(task.queue_name, task.message_id);
    perform switchyard._pause_run(task.run_id, format(
      'whenExhausted pause: step %s%s failed after %s attempt(s): %s', to_json(task.step_slug)::text,
      case when task.task_index > 0 then format(' element %s', task.task_index) else '' end,
      task.attempts_count, error_text), 'whenExhausted');
    return 'paused';
  end if;
  perform switchyard._fail_run(task, error_text);
  return 'failed';
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/functions/row_triggers/_row_trigger_json.sql

-- One row trigger declaration as the API answers it (list_row_triggers, declare_row_trigger):
-- its fields, whether its trigger is in place on the table, and its backfill's progress.
create or replace function switchyard._row_trigger_json(d switchyard.row_triggers)
returns jsonb
language sql
stable
set search_path = ''
as $$
  select jsonb_build_object(
    'name', d.name,
    'table', format('%I.%I', d.table_schema, d.table_name),
    'alias', d.alias,
    'events', to_jsonb(d.events),
    'input_columns', to_jsonb(d.input_columns),
    'input_expression', d.input_expression,
    'condition', d.condition,
    'key_by', d.key_by,
    'mode', d.mode,
    'ttl', d.ttl,
    'delay', d.delay,
    'max_delay', d.max_delay,
    'batch_by', d.batch_by,
    'installed', exists (
      select 1 from pg_catalog.pg_trigger g
        join pg_catalog.pg_class c on c.oid = g.tgrelid
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where n.nspname = d.table_schema and c.relname = d.table_name
         and g.tgname = 'switchyard_' || d.name),
    'backfill', case when d.backfill_state is null then null else jsonb_build_object(
      'state', d.backfill_state,
      'after', to_jsonb(d.backfill_after),
      'rows', d.backfill_rows,
      'runs', d.backfill_started,
      'batches', d.backfill_batches,
      'updated_at', d.backfill_updated_at) end,
    'declared_at', d.declared_at)
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/views.sql

-- Steps routed to a queue that started runs may still reach: the step has not finished in
-- that run yet (startup coverage, docs/design/worker.md#worker-start-up step 5, and drain,
-- docs/design/versions.md). Driven from
-- the started runs (runs_flow_started), with one primary-key probe per (run, step) (a
-- LATERAL ... LIMIT 1, so no plan can join by scanning every state ever recorded): the cost
-- follows the open runs, never the history.
create or replace view switchyard.open_run_steps as
  select r.run_id, st.queue_name, st.flow_slug, st.step_slug
    from switchyard.runs r
    join switchyard.steps st on st.flow_slug = r.flow_slug
    cross join lateral (select ss.status from switchyard.step_states ss
                         where ss.run_id = r.run_id and ss.step_slug = st.step_slug
                         limit 1) ss
   where r.status = 'started' and ss.status in ('created', 'started');

-- The metrics as rows (docs/design/observability.md#counters-histograms-and-levels), for
-- Prometheus' text (prometheusText reads
-- them through switchyard.metric_snapshot) and for Grafana's PostgreSQL data source: the same
-- figures either way. A flow's label is its alias (alias_members), else its slug; its version
-- the concrete slug.
--
-- metrics_counters: every counter and histogram summed over its shards (and buckets): `n` how
-- many were counted, `total` the sum of a histogram's observations in seconds. The refusals of
-- queue functions (switchyard.refusals, a count per function and kind already) are the
-- counter 'refused_starts', the kind its outcome; 'runs_started' is derived (below).
create or replace view switchyard.metrics_counters as
  select c.metric, c.queue_name, ''::text as function_name, coalesce(am.alias, c.flow_slug) as flow,
         c.flow_slug as version, c.step_slug as step, c.outcome, sum(c.n)::bigint as n,
         sum(c.total)::double precision as total
    from switchyard.metric_counters c
    left join switchyard.alias_members am on am.flow_slug = c.flow_slug
   group by c.metric, c.queue_name, c.flow_slug, am.alias, c.step_slug, c.outcome
  union all
  -- Runs started, with no write when a run starts: every run started is ended now, or started
  -- again after ending (a retry), or still started, so started = ended - retried + started now.
  -- Each term only grows or moves into another (prune deletes ended runs, never a counter).
  select 'runs_started', '', '', coalesce(am.alias, x.flow_slug), x.flow_slug, '', '',
         sum(x.n)::bigint, 0
    from (select c.flow_slug, case when c.metric = 'run_duration' then c.n else -c.n end as n
            from switchyard.metric_counters c
           where c.metric in ('run_duration', 'runs_retried')
          union all
          select r.flow_slug, count(*) from switchyard.runs r
           where r.status = 'started' group by r.flow_slug) x
    left join switchyard.alias_members am on am.flow_slug = x.flow_slug
   group by x.flow_slug, am.alias
  union all
  select 'refused_starts', coalesce(f.queue_name, ''), r.function_name, '', '', '', r.refusal,
         r.count, 0
    from switchyard.refusals r
    left join switchyard.worker_functions f on f.function_name = r.function_name;

-- metrics_histograms: each histogram's buckets, cumulative as Prometheus' le buckets are: for
-- every label set with an observation, every bound of metric_bucket_bounds() and 'Infinity'.
create or replace view switchyard.metrics_histograms as
  with b as (
    select c.metric, c.queue_name, c.flow_slug, c.step_slug, c.outcome, c.bucket, sum(c.n) as n
      from switchyard.metric_counters c
     where c.bucket > 0
     group by c.metric, c.queue_name, c.flow_slug, c.step_slug, c.outcome, c.bucket
  ),
  sets as (select distinct b.metric, b.queue_name, b.flow_slug, b.step_slug, b.outcome from b)
  select s.metric, s.queue_name, coalesce(am.alias, s.flow_slug) as flow, s.flow_slug as version,
         s.step_slug as step, s.outcome, i.bucket,
         coalesce((switchyard.metric_bucket_bounds())[i.bucket], 'Infinity')::double precision as le,
         (sum(coalesce(b.n, 0)) over (partition by s.metric, s.queue_name, s.flow_slug,
                                                   s.step_slug, s.outcome
                                      order by i.bucket))::bigint as count
    from sets s
    cross join generate_series(1, 17) as i(bucket)
    left join b on b.metric = s.metric and b.queue_name = s.queue_name
               and b.flow_slug = s.flow_slug and b.step_slug = s.step_slug
               and b.outcome = s.outcome and b.bucket = i.bucket
    left join switchyard.alias_members am on am.flow_slug = s.flow_slug;

-- metrics_gauges: the levels (switchyard.metric_levels).
create or replace view switchyard.metrics_gauges as
  select l.gauge, l.queue_name, l.function_name, l.flow, l.version, l.value
    from switchyard.metric_levels() l;

-- metrics_minutes: the dashboard's charts per queue and minute of the last hour
-- (dashboard_metrics_history), a time series for a Grafana panel.
create or replace view switchyard.metrics_minutes as
  select h.queue_name, h.minute, h.lag_seconds, h.p95_ms, h.failures, h.completions
    from switchyard.dashboard_metrics_history(60) h;

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/after/010_clock_defaults.sql

-- Every recorded time of the SQL core comes from its clock, switchyard.clock_now()
-- (docs/design/clock.md), column defaults included, as tables/*.sql declare them. The function
-- is now(), so rows written before and after this step read the same clock.
alter table switchyard.queues
  alter column created_at set default switchyard.clock_now();
alter table switchyard.flows
  alter column created_at set default switchyard.clock_now();
alter table switchyard.flow_option_changes
  alter column changed_at set default switchyard.clock_now();
alter table switchyard.aliases
  alter column activated_at set default switchyard.clock_now();
alter table switchyard.alias_members
  alter column added_at set default switchyard.clock_now();
alter table switchyard.alias_activations
  alter column activated_at set default switchyard.clock_now();
alter table switchyard.alias_declarations
  alter column declared_at set default switchyard.clock_now();
alter table switchyard.runs
  alter column started_at set default switchyard.clock_now();
alter table switchyard.step_states
  alter column created_at set default switchyard.clock_now();
alter table switchyard.run_signals
  alter column signalled_at set default switchyard.clock_now();
alter table switchyard.step_tasks
  alter column queued_at set default switchyard.clock_now();
alter table switchyard.run_events
  alter column created_at set default switchyard.clock_now();
alter table switchyard.user_start_aliases
  alter column added_at set default switchyard.clock_now();
alter table switchyard.task_checkpoints
  alter column saved_at set default switchyard.clock_now();
alter table switchyard.user_signal_steps
  alter column added_at set default switchyard.clock_now();
alter table switchyard.worker_functions
  alter column created_at set default switchyard.clock_now();
alter table switchyard.workers
  alter column started_at set default switchyard.clock_now(),
  alter column last_heartbeat_at set default switchyard.clock_now();
alter table switchyard.quarantined_messages
  alter column quarantined_at set default switchyard.clock_now();
alter table switchyard.refusals
  alter column first_at set default switchyard.clock_now(),
  alter column last_at set default switchyard.clock_now();
alter table switchyard.settings
  alter column updated_at set default switchyard.clock_now();
alter table switchyard.wake_requests
  alter column requested_at set default switchyard.clock_now();
alter table switchyard.fences
  alter column opened_at set default switchyard.clock_now();
alter table switchyard.rate_limits
  alter column refilled_at set default switchyard.clock_now(),
  alter column updated_at set default switchyard.clock_now();
alter table switchyard.schedules
  alter column created_at set default switchyard.clock_now(),
  alter column updated_at set default switchyard.clock_now();
alter table switchyard.schedule_ticks
  alter column recorded_at set default switchyard.clock_now();
alter table switchyard.start_keys
  alter column first_at set default switchyard.clock_now();

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/after/011_user_rerun_aliases_clock.sql

-- The clock of supabase/schemas/tables/052_user_rerun_aliases.sql (docs/design/clock.md), once
-- switchyard.clock_now() exists: before/011_user_rerun_aliases.sql created the table with now().
alter table switchyard.user_rerun_aliases
  alter column added_at set default switchyard.clock_now();

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/after/020_row_triggers_clock.sql

-- Row triggers (issue 43): the declaration's time comes from the SQL core's clock, as
-- supabase/schemas/tables/130_row_triggers.sql declares it. before/046_row_triggers.sql created
-- the table before switchyard.clock_now() was defined, with now() (the same time).
alter table switchyard.row_triggers
  alter column declared_at set default switchyard.clock_now();

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/after/021_batches_clock.sql

-- Batching (issue 43): the batches' times come from the SQL core's clock, as
-- supabase/schemas/tables/135_batches.sql declares them. before/047_batches.sql created the
-- tables before switchyard.clock_now() was defined, with now() (the same time).
alter table switchyard.batches
  alter column opened_at set default switchyard.clock_now();
alter table switchyard.batch_events
  alter column added_at set default switchyard.clock_now();

-- --------------------------------------------------------------------------------------------
-- supabase/upgrades/unreleased/after/045_metric_counters_from_history.sql

-- The counters start from the history (issue 42,
-- docs/design/observability.md#counters-histograms-and-levels): a database upgraded
-- from 0.4.0 counts on from what its rows still hold (what prune has not deleted), not from zero.
-- One pass over the tasks, the failed attempts and the ended runs, in the migration:
--   claims            every attempt a task used (attempts_count); retries those after its first
--   task_duration     each completed task, claim of its last attempt to completion
--   queue_wait        each task claimed once, from its message becoming visible to the claim (a
--                     retried task's first wait is not kept)
--   failed_attempts   the rows of failed_attempts
--   run_duration      each ended run, by outcome (so runs_started, derived, is every run held)
-- Throttled claims, retried runs and signals were never recorded: they start at zero. A claim a
-- 0.4.0 worker commits while the migration runs may be counted by neither. Then the sample of
-- the oldest minute the charts reach is taken, so the charts' first difference starts from these
-- counters instead of from zero (the history shows as no spike).
insert into switchyard.metric_counters as c
       (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard, n, total)
select x.metric, x.queue_name, x.flow_slug, x.step_slug, x.outcome, x.bucket, 0,
       sum(x.n)::bigint, coalesce(sum(x.total), 0)
  from (
    select m.metric, t.queue_name, t.flow_slug, t.step_slug, ''::text as outcome,
           0::smallint as bucket,
           case when m.metric = 'claims' then t.attempts_count
                else t.attempts_count - 1 end as n,
           0::double precision as total
      from switchyard.step_tasks t
     cross join (values ('claims'), ('retries')) as m(metric)
     where t.attempts_count > case when m.metric = 'claims' then 0 else 1 end
    union all
    select 'task_duration', t.queue_name, t.flow_slug, t.step_slug, '',
           switchyard.metric_bucket(extract(epoch from t.completed_at - t.started_at)), 1,
           greatest(extract(epoch from t.completed_at - t.started_at), 0)
      from switchyard.step_tasks t
     where t.status = 'completed' and t.started_at is not null and t.completed_at is not null
    union all
    select 'queue_wait', t.queue_name, t.flow_slug, t.step_slug, '',
           switchyard.metric_bucket(extract(epoch from t.started_at - t.queued_at) - st.start_delay),
           1, greatest(extract(epoch from t.started_at - t.queued_at) - st.start_delay, 0)
      from switchyard.step_tasks t
      join switchyard.steps st on st.flow_slug = t.flow_slug and st.step_slug = t.step_slug
     where t.attempts_count = 1 and t.started_at is not null
    union all
    select 'failed_attempts', f.queue_name, f.flow_slug, f.step_slug, '', 0, 1, 0
      from switchyard.failed_attempts f
    union all
    select 'run_duration', '', r.flow_slug, '', r.status,
           switchyard.metric_bucket(extract(epoch from coalesce(r.completed_at, r.failed_at,
                                                                r.cancelled_at) - r.started_at)),
           1, greatest(extract(epoch from coalesce(r.completed_at, r.failed_at, r.cancelled_at)
                                          - r.started_at), 0)
      from switchyard.runs r
     where r.status in ('completed', 'failed', 'cancelled')
  ) x
 group by x.metric, x.queue_name, x.flow_slug, x.step_slug, x.outcome, x.bucket
 order by 1, 2, 3, 4, 5, 6
on conflict (metric, queue_name, flow_slug, step_slug, outcome, bucket, shard) do update
   set n = c.n + excluded.n, total = c.total + excluded.total;

select switchyard.sample_metrics(switchyard.clock_now() - interval '1440 minutes');

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/privileges.sql

-- Privileges: one rule for the whole schema (docs/design/supabase.md, Privileges), applied
-- last in a fresh build and again at the end of every migration, so a database upgraded from
-- any release has exactly the privileges of a fresh one.
--
--   - PUBLIC, anon and authenticated (PostgREST's roles): nothing. The opt-ins of
--     docs/design/client.md (run events, start_user_run, signal_user_run) are granted by
--     the operator.
--   - service_role: USAGE on the schema, SELECT on every table and view, INSERT and DELETE on
--     user_start_aliases, user_signal_steps and user_rerun_aliases, and EXECUTE on the API: every function whose
--     name does not start with "_". Functions named "_..." are the SQL core's own and no role
--     but the owner runs them.
revoke all on schema switchyard from public;

revoke all on all tables in schema switchyard from public;

revoke all on all sequences in schema switchyard from public;

revoke execute on all functions in schema switchyard from public;

-- Functions get EXECUTE for PUBLIC from PostgreSQL's global default privileges; this per-schema
-- revoke cannot take that away (the event trigger in triggers.sql does), it keeps per-schema
-- grants from giving it.
alter default privileges in schema switchyard revoke execute on functions from public;

do $$
declare
  role_name text;
  fn regprocedure;
begin
  foreach role_name in array array['anon', 'authenticated'] loop
    if exists (select 1 from pg_roles where rolname = role_name) then
      execute format('revoke all on schema switchyard from %I', role_name);
      execute format('revoke all on all tables in schema switchyard from %I', role_name);
      execute format('revoke all on all sequences in schema switchyard from %I', role_name);
      execute format('revoke execute on all functions in schema switchyard from %I', role_name);
      -- Supabase grants per schema: the migration role's per-schema defaults take it back.
      execute format('alter default privileges in schema switchyard revoke all on functions from %I', role_name);
      execute format('alter default privileges in schema switchyard revoke all on tables from %I', role_name);
      execute format('alter default privileges in schema switchyard revoke all on sequences from %I', role_name);
    end if;
  end loop;
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant usage on schema switchyard to service_role;
    revoke all on all tables in schema switchyard from service_role;
    revoke all on all sequences in schema switchyard from service_role;
    revoke execute on all functions in schema switchyard from service_role;
    grant select on all tables in schema switchyard to service_role;
    grant insert, delete on switchyard.user_start_aliases to service_role;
    grant insert, delete on switchyard.user_signal_steps to service_role;
    grant insert, delete on switchyard.user_rerun_aliases to service_role;
    for fn in
      select p.oid::regprocedure from pg_proc p
       where p.pronamespace = 'switchyard'::regnamespace and left(p.proname, 1) <> '_'
       order by p.oid
    loop
      execute format('grant execute on function %s to service_role', fn);
    end loop;
  end if;
end
$$;

-- --------------------------------------------------------------------------------------------
-- supabase/schemas/exposure.sql

-- Run events for signed-in users and Supabase Realtime (docs/design/client.md): the
-- policy where the auth schema exists, the publication where supabase_realtime exists. Safe to
-- run again; every migration ends with it.
select switchyard.expose_run_events();
