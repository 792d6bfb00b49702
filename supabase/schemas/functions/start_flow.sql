-- Starts a run of a concrete flow or of an alias's active version.
--
-- `run_id` (optional) makes the start idempotent: the caller chooses the id, and a second
-- start with the same id returns the existing run and starts nothing. The same id with
-- another input, naming another flow, or for another owner, is refused (23505). Two concurrent
-- starts with one id create one run: the second insert waits for the first on the primary key
-- and then finds its row (docs/ARCHITECTURE.md §5.8).
--
-- `owner` (optional) records who the run is for: its events carry it for row-level security
-- (docs/ARCHITECTURE.md §14).
--
-- The caller's trace context (a W3C traceparent in the transaction-local setting
-- switchyard.trace_context, docs/ARCHITECTURE.md §16) is stored with a new run, so the spans
-- of its tasks join the caller's trace.
create or replace function switchyard.start_flow(
  flow_or_alias text, input jsonb, run_id uuid default null, owner uuid default null
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
  existing record;
  trace_context text := nullif(current_setting('switchyard.trace_context', true), '');
begin
  if trace_context is not null
     and trace_context !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): trace context %s is invalid: use a W3C traceparent, '
      '<2 hex>-<32 hex>-<16 hex>-<2 hex> in lower case, such as '
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      switchyard._clip(flow_or_alias), switchyard._clip(trace_context)),
      detail = jsonb_build_object(
        'rule', 'trace_context_format', 'argument', 'trace_context',
        'value', left(trace_context, 200))::text;
  end if;
  if input is null then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): input must be a JSON value, got SQL NULL (use ''null''::jsonb for JSON null)',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'input_sql_null', 'argument', 'input', 'value', null,
        'flow_or_alias', left(flow_or_alias, 200))::text;
  end if;
  concrete := switchyard.resolve_flow(flow_or_alias);
  -- The run's deadline (docs/ARCHITECTURE.md §14): the flow's runTimeout from now, or the
  -- start's deadlineAt (a transaction-local setting switchyard.deadline_at), whichever is first.
  insert into switchyard.runs (run_id, flow_slug, started_as, input, remaining_steps, owner,
                               deadline_at, trace_context)
  select coalesce(start_flow.run_id, gen_random_uuid()), concrete, flow_or_alias, input, count(*),
         start_flow.owner,
         least(now() + (select f.run_timeout from switchyard.flows f where f.flow_slug = concrete)
                       * interval '1 second',
               nullif(current_setting('switchyard.deadline_at', true), '')::timestamptz),
         trace_context
    from switchyard.steps st where st.flow_slug = concrete
  on conflict on constraint runs_pkey do nothing
  returning runs.run_id into new_run;
  if new_run is null then
    -- The id exists (committed, or committed while this insert waited for it): the same
    -- start again returns it; anything else under that id is refused.
    select r.flow_slug, r.started_as, r.input, r.owner into existing
      from switchyard.runs r where r.run_id = start_flow.run_id;
    -- Another owner's run is refused first, so the caller learns nothing else of it.
    if existing.owner is distinct from start_flow.owner then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started for another owner: '
        'a run id names one start; use a new id for another owner',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_owner', 'argument', 'owner', 'value', start_flow.owner::text,
          'run_id', start_flow.run_id)::text;
    end if;
    if existing.flow_slug <> concrete and existing.started_as <> flow_or_alias then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s already belongs to a run of flow %s (started as %s): '
        'a run id names one start; use a new id for another flow',
        to_json(flow_or_alias)::text, start_flow.run_id, to_json(existing.flow_slug)::text,
        to_json(existing.started_as)::text),
        detail = jsonb_build_object(
          'rule', 'run_id_other_flow', 'argument', 'run_id', 'value', start_flow.run_id::text,
          'flow_or_alias', left(flow_or_alias, 200), 'existing_flow_slug', existing.flow_slug,
          'existing_started_as', existing.started_as)::text;
    end if;
    if existing.input <> input then
      raise exception using errcode = '23505', message = format(
        'start_flow(%s): run id %s was started with another input: '
        'a run id names one start; use a new id for another input',
        to_json(flow_or_alias)::text, start_flow.run_id),
        detail = jsonb_build_object(
          'rule', 'run_id_other_input', 'argument', 'input', 'value', left(input::text, 200),
          'run_id', start_flow.run_id, 'existing_input', left(existing.input::text, 200))::text;
    end if;
    return start_flow.run_id;
  end if;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select new_run, st.flow_slug, st.step_slug, st.deps_count
    from switchyard.steps st where st.flow_slug = concrete;
  -- A delayed start (start_flow_at sets the setting for this call, docs/ARCHITECTURE.md §5.11):
  -- the steps start when expire_waits finds the run due.
  if nullif(current_setting('switchyard.start_at', true), '') is null then
    perform switchyard._start_ready_steps(new_run);
  else
    insert into switchyard.delayed_starts (run_id, start_at)
    values (new_run, current_setting('switchyard.start_at')::timestamptz);
  end if;
  return new_run;
end
$$;
