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
