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
