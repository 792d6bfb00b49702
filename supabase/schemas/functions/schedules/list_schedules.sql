-- Every schedule as the API answers one (_schedule_json: fields, next tick, latest tick and its
-- run's status, missed and skipped ticks), by name. For the dashboard and `deno task schedule`.
create or replace function switchyard.list_schedules()
returns jsonb
language sql
stable
set search_path = ''
as $$
  select coalesce(jsonb_agg(switchyard._schedule_json(s.name) order by s.name), '[]'::jsonb)
    from switchyard.schedules s
$$;
