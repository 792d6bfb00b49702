-- The dashboard's row triggers section (docs/design/origins.md, docs/design/ingestion.md): every
-- declaration as list_row_triggers answers it (table, alias, events, whether its trigger is in
-- place, its backfill's state, cursor and counts), with the runs it started in the last hour:
-- the runs with an origin naming it (row_trigger or backfill), counted through the partial
-- index runs_origin_started, which holds only runs with an origin. PL/pgSQL, so it may be
-- created before _row_trigger_json, which takes the table's row type.
create or replace function switchyard.dashboard_row_triggers()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return (
    with recent as (
      select r.origin ->> 'trigger' as name, count(*) as runs
        from switchyard.runs r
       where r.origin is not null
         and r.started_at > switchyard.clock_now() - interval '1 hour'
         and r.origin ->> 'kind' in ('row_trigger', 'backfill')
       group by 1)
    select coalesce(jsonb_agg(switchyard._row_trigger_json(d)
                                || jsonb_build_object('runs_last_hour', coalesce(c.runs, 0))
                              order by d.name), '[]'::jsonb)
      from switchyard.row_triggers d
      left join recent c on c.name = d.name);
end
$$;
