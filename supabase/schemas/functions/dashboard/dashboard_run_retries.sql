-- How often each of these runs was retried (its 'retried' events), for the dashboard's runs
-- table: a run that completed after a retry says so. Runs never retried are absent.
create or replace function switchyard.dashboard_run_retries(run_ids uuid[])
returns table (run_id uuid, retries int)
language sql
stable
security definer
set search_path = ''
as $$
  select e.run_id, count(*)::int
    from switchyard.run_events e
   where e.run_id = any (run_ids) and e.step_slug is null and e.event = 'retried'
   group by e.run_id
$$;
