-- The keyed concurrency slot of a task
-- (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): `<flow>/<step>:<value>`,
-- the value at the step's `concurrency.key` path of the run input (input 'run') or of the task's
-- own input (input 'step': a map task's element, a dependent step's object of dependency
-- outputs, a root step's run input), as JSON text ("acme" and 1 stay apart; absent: null, a key of
-- its own; over 200 characters: its MD5). Null when the step has no keyed concurrency. The one
-- computation of a key: the claim's _flow_control counts slots by it, and a task's message
-- carries it (_task_message) so the read can serve keys in turn
-- (docs/design/flow-control.md#priority-and-keys-in-turn).
create or replace function switchyard._concurrency_key(
  run_id uuid, flow_slug text, step_slug text, task_index int
)
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  st record;
  src jsonb;
  v text;
begin
  select s.concurrency_path, s.concurrency_input, s.step_type, s.deps_count into st
    from switchyard.steps s
   where s.flow_slug = _concurrency_key.flow_slug and s.step_slug = _concurrency_key.step_slug
     and s.concurrency_limit is not null;
  if not found then
    return null;
  end if;
  select r.input into src from switchyard.runs r where r.run_id = _concurrency_key.run_id;
  if st.concurrency_input = 'step' then
    -- The task's input, as start_tasks hands it to the handler.
    if st.step_type = 'map' then
      if st.deps_count > 0 then
        select ds.output into src from switchyard.deps d
          join switchyard.step_states ds
            on ds.run_id = _concurrency_key.run_id and ds.step_slug = d.dep_slug
         where d.flow_slug = _concurrency_key.flow_slug and d.step_slug = _concurrency_key.step_slug
         limit 1;
      end if;
      src := src -> task_index;
    elsif st.deps_count > 0 then
      select coalesce(jsonb_object_agg(d.dep_slug, ds.output), '{}'::jsonb) into src
        from switchyard.deps d
        join switchyard.step_states ds
          on ds.run_id = _concurrency_key.run_id and ds.step_slug = d.dep_slug
       where d.flow_slug = _concurrency_key.flow_slug and d.step_slug = _concurrency_key.step_slug
         and ds.status = 'completed';
    end if;
  end if;
  v := coalesce((src #> st.concurrency_path)::text, 'null');
  if length(v) > 200 then
    v := 'md5:' || md5(v);
  end if;
  return _concurrency_key.flow_slug || '/' || _concurrency_key.step_slug || ':' || v;
end
$$;
