-- Where these runs came from (docs/design/origins.md), for the dashboard's runs table and run
-- detail: each run's origin (a row trigger, a backfill, a webhook, a batch). Runs started plainly
-- (no origin) are absent. One probe of the run's row per run.
create or replace function switchyard.dashboard_run_origins(run_ids uuid[])
returns table (run_id uuid, origin jsonb)
language sql
stable
security definer
set search_path = ''
as $$
  select r.run_id, r.origin
    from switchyard.runs r
   where r.run_id = any (run_ids) and r.origin is not null
$$;
