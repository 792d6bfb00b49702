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
