-- Per queue and concrete version: active (an alias target, or a flow that is its
-- own alias), draining (started runs may still reach the queue, or executable or
-- recoverable tasks remain), or drained. Steps with no queue (wait, sleep and flow steps) add no
-- row: their open runs count on the queues of the version's other steps.
create or replace function switchyard.drain_status(queue_name text default null)
returns table (
  queue_name text, flow_slug text, alias text, state text,
  started_runs bigint, queued_tasks bigint, started_tasks bigint
)
language sql
stable
security definer
set search_path = ''
as $$
  with placements as (
    select distinct st.queue_name, st.flow_slug
      from switchyard.steps st
     where st.queue_name is not null
       and (drain_status.queue_name is null or st.queue_name = drain_status.queue_name)
  ),
  counted as (
    select p.queue_name, p.flow_slug,
           coalesce(m.alias, a_self.alias) as alias,
           (a_target.alias is not null or m.alias is null) as is_active,
           (select count(distinct o.run_id) from switchyard.open_run_steps o
             where o.queue_name = p.queue_name and o.flow_slug = p.flow_slug) as started_runs,
           (select count(*) from switchyard.step_tasks t
              join switchyard.runs r on r.run_id = t.run_id and r.status = 'started'
             where t.queue_name = p.queue_name and t.flow_slug = p.flow_slug and t.status = 'queued') as queued_tasks,
           (select count(*) from switchyard.step_tasks t
              join switchyard.runs r on r.run_id = t.run_id and r.status = 'started'
             where t.queue_name = p.queue_name and t.flow_slug = p.flow_slug and t.status = 'started') as started_tasks
      from placements p
      left join switchyard.alias_members m on m.flow_slug = p.flow_slug
      left join switchyard.aliases a_target on a_target.flow_slug = p.flow_slug
      left join switchyard.aliases a_self on a_self.alias = p.flow_slug and m.alias is null
  )
  select c.queue_name, c.flow_slug, c.alias,
         case when c.is_active then 'active'
              when c.started_runs > 0 or c.queued_tasks > 0 or c.started_tasks > 0 then 'draining'
              else 'drained' end,
         c.started_runs, c.queued_tasks, c.started_tasks
    from counted c
   order by c.queue_name, c.flow_slug
$$;
