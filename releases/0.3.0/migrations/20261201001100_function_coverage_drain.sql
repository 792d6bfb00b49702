-- Startup coverage (docs/ARCHITECTURE.md §4 step 5) and version drain status (§6).

-- Steps routed to a queue that started runs may still reach: the step has not
-- finished in that run yet.
create or replace view switchyard.open_run_steps as
  select ss.run_id, st.queue_name, ss.flow_slug, ss.step_slug
    from switchyard.step_states ss
    join switchyard.runs r on r.run_id = ss.run_id and r.status = 'started'
    join switchyard.steps st on st.flow_slug = ss.flow_slug and st.step_slug = ss.step_slug
   where ss.status in ('created', 'started');

-- Every (flow, step) pair a worker on this queue must support that the given set
-- lacks, with why: an active alias target routed here, a started run that may
-- still reach the queue, or an executable/recoverable task snapshot on the queue.
-- PL/pgSQL rather than SQL so the query is planned for the actual queue name (a SQL
-- function's body gets a generic plan, which scans every open task and run of every
-- queue at each worker start-up).
create or replace function switchyard.coverage_gaps(queue_name text, supported_pairs text[])
returns table (flow_slug text, step_slug text, reasons text)
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return query
  with supported as (
    select distinct p.pair from unnest(supported_pairs) p(pair)
  ),
  needed as (
    select st.flow_slug, st.step_slug, format('active target of alias %s', a.alias) as reason
      from switchyard.aliases a
      join switchyard.steps st on st.flow_slug = a.flow_slug
     where st.queue_name = coverage_gaps.queue_name
    union all
    select distinct o.flow_slug, o.step_slug, 'started run may reach the queue'
      from switchyard.open_run_steps o
     where o.queue_name = coverage_gaps.queue_name
    union all
    select distinct t.flow_slug, t.step_slug, format('%s task on the queue', t.status)
      from switchyard.step_tasks t
      join switchyard.runs r on r.run_id = t.run_id and r.status = 'started'
     where t.queue_name = coverage_gaps.queue_name and t.status in ('queued', 'started')
  )
  select n.flow_slug, n.step_slug, string_agg(distinct n.reason, '; ' order by n.reason)
    from needed n
   where not exists (select 1 from supported s where s.pair = n.flow_slug || '/' || n.step_slug)
   group by n.flow_slug, n.step_slug
   order by n.flow_slug, n.step_slug;
end
$$;

-- Per queue and concrete version: active (an alias target, or a flow that is its
-- own alias), draining (started runs may still reach the queue, or executable or
-- recoverable tasks remain), or drained.
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
     where drain_status.queue_name is null or st.queue_name = drain_status.queue_name
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
