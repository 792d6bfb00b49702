-- The run id of a schedule's tick: derived from (schedule, tick instant), so the tick's run is
-- started at most once however often the tick fires, and a backfill of a tick that ran is a
-- no-op. A version-5-shaped UUID from an MD5 of the pair; it can never be a user's (v4) id.
create or replace function switchyard._schedule_run_id(schedule_name text, tick_at timestamptz)
returns uuid
language sql
immutable
set search_path = ''
as $$
  select (substr(h, 1, 12) || '5' || substr(h, 14, 3) || '8' || substr(h, 18, 15))::uuid
    from (select md5('switchyard schedule ' || schedule_name || ' '
                     || extract(epoch from tick_at)::bigint::text) as h) x
$$;
