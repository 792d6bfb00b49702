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
