-- Archives every queued message of a run, one pgmq.archive per queue (a map step may have
-- thousands): their tasks then classify as stale (the run is no longer started). The run's
-- tasks are read by key and filtered afterwards, as _fail_run does
-- (docs/design/claim.md#planner-settings:
-- a status condition in the query let the planner read every live task of every queue).
create or replace function switchyard._archive_queued(run uuid)
returns void
language plpgsql
volatile
set search_path = ''
as $$
declare
  q record;
begin
  for q in
    select t.queue_name,
           array_agg(t.message_id order by t.message_id) filter (where t.status = 'queued') as ids
      from switchyard.step_tasks t
     where t.run_id = run
     group by t.queue_name order by t.queue_name
  loop
    if q.ids is not null then
      perform pgmq.archive(q.queue_name, q.ids);
    end if;
  end loop;
end
$$;
