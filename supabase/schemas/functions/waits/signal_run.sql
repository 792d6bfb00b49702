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
