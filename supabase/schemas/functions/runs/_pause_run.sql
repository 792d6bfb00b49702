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
