-- Starting runs and sending ready steps to their queues.

-- Moves every created step of a run whose dependencies are complete to started,
-- creates its task with the step's queue as an immutable snapshot, and sends the
-- task message to that queue (delayed by the step's startDelay).
create or replace function switchyard._start_ready_steps(target_run uuid)
returns int
language plpgsql
volatile
set search_path = ''
as $$
declare
  ready record;
  msg_id bigint;
  started int := 0;
begin
  for ready in
    with moved as (
      update switchyard.step_states ss
         set status = 'started', started_at = now()
       where ss.run_id = target_run and ss.status = 'created' and ss.remaining_deps = 0
      returning ss.run_id, ss.flow_slug, ss.step_slug
    )
    select m.run_id, m.flow_slug, m.step_slug, st.queue_name, st.start_delay,
           coalesce(st.max_attempts, f.max_attempts) as max_attempts,
           coalesce(st.base_delay, f.base_delay) as base_delay,
           coalesce(st.max_delay, f.max_delay) as max_delay,
           coalesce(st.timeout, f.timeout) as timeout
      from moved m
      join switchyard.steps st on st.flow_slug = m.flow_slug and st.step_slug = m.step_slug
      join switchyard.flows f on f.flow_slug = m.flow_slug
     order by st.step_index
  loop
    -- The body is a hint for humans; claiming trusts only (queue_name, message_id).
    select s into msg_id from pgmq.send(
      ready.queue_name,
      jsonb_build_object('run_id', ready.run_id, 'flow_slug', ready.flow_slug, 'step_slug', ready.step_slug),
      ready.start_delay) s;
    insert into switchyard.step_tasks (run_id, step_slug, flow_slug, queue_name, message_id,
                                       max_attempts, base_delay, max_delay, timeout)
    values (ready.run_id, ready.step_slug, ready.flow_slug, ready.queue_name, msg_id,
            ready.max_attempts, ready.base_delay, ready.max_delay, ready.timeout);
    started := started + 1;
  end loop;
  return started;
end
$$;

-- Starts a run of a concrete flow or of an alias's active version.
create or replace function switchyard.start_flow(flow_or_alias text, input jsonb)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  concrete text;
  new_run uuid;
begin
  if input is null then
    raise exception using errcode = '22023', message = format(
      'start_flow(%s): input must be a JSON value, got SQL NULL (use ''null''::jsonb for JSON null)',
      coalesce(to_json(flow_or_alias)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'input_sql_null', 'argument', 'input', 'value', null,
        'flow_or_alias', left(flow_or_alias, 200))::text;
  end if;
  concrete := switchyard.resolve_flow(flow_or_alias);
  insert into switchyard.runs (flow_slug, started_as, input, remaining_steps)
  select concrete, flow_or_alias, input, count(*)
    from switchyard.steps st where st.flow_slug = concrete
  returning run_id into new_run;
  insert into switchyard.step_states (run_id, flow_slug, step_slug, remaining_deps)
  select new_run, st.flow_slug, st.step_slug, st.deps_count
    from switchyard.steps st where st.flow_slug = concrete;
  perform switchyard._start_ready_steps(new_run);
  return new_run;
end
$$;
