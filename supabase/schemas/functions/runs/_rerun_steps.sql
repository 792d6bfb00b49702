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
