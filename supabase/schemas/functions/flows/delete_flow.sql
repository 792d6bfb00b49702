-- Deletes a concrete flow with its runs (docs/design/overview.md#queue-ownership): its private
-- queues are
-- dropped with it, shared queues are kept and only its own queued messages archived. Refuses an
-- alias target (55000 flow_is_alias_target). The values it echoes are clipped. A task still
-- running on it for a run moved off it is that run's: it names the run's flow from then on.
create or replace function switchyard.delete_flow(flow_slug text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  task record;
  q record;
  target_alias text;
begin
  perform pg_advisory_xact_lock(hashtextextended('switchyard.flow:' || lower(delete_flow.flow_slug), 0));
  if not exists (select 1 from switchyard.flows f where f.flow_slug = delete_flow.flow_slug) then
    perform switchyard._refuse('22023', 'flow_not_compiled', 'flow_slug', delete_flow.flow_slug,
      format(
      'cannot delete flow %s: it is not compiled', switchyard._clip(delete_flow.flow_slug)));
  end if;
  select a.alias into target_alias from switchyard.aliases a where a.flow_slug = delete_flow.flow_slug;
  if target_alias is not null then
    perform switchyard._refuse('55000', 'flow_is_alias_target', 'flow_slug', delete_flow.flow_slug,
      format(
      'cannot delete flow %s: it is the active target of alias %s; activate another version first',
      switchyard._clip(delete_flow.flow_slug), switchyard._clip(target_alias)),
      context => jsonb_build_object('alias', target_alias));
  end if;
  -- A run moved off this flow while a task of it ran (move_run, docs/design/rerun.md) is
  -- another flow's run: its running task names this flow until it ends. From here on it names
  -- its run's flow (the move's proof made the step the same there: kind and dependencies), so its
  -- answer still counts and deleting this flow takes nothing of that run.
  update switchyard.step_tasks t set flow_slug = r.flow_slug
    from switchyard.runs r
   where t.flow_slug = delete_flow.flow_slug and t.status = 'started'
     and r.run_id = t.run_id and r.flow_slug <> delete_flow.flow_slug;
  for task in
    select t.queue_name, t.message_id from switchyard.step_tasks t
     where t.flow_slug = delete_flow.flow_slug and t.status in ('queued', 'started')
     order by t.queue_name, t.message_id
     for update
  loop
    perform pgmq.archive(task.queue_name, task.message_id);
  end loop;
  delete from switchyard.runs r where r.flow_slug = delete_flow.flow_slug;
  delete from switchyard.alias_members m where m.flow_slug = delete_flow.flow_slug;
  delete from switchyard.flows f where f.flow_slug = delete_flow.flow_slug;
  for q in
    select x.queue_name, x.pgmq_name from switchyard.queues x
     where x.ownership = 'private' and x.owner_flow = delete_flow.flow_slug
  loop
    delete from switchyard.queues x where x.queue_name = q.queue_name;
    perform pgmq.drop_queue(q.pgmq_name);
  end loop;
end
$$;
