-- A schedule as the API answers it: its fields, its next tick, and its latest tick's run.
create or replace function switchyard._schedule_json(schedule_name text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
declare
  s switchyard.schedules;
  next_at timestamptz;
  last jsonb;
begin
  select * into s from switchyard.schedules x where x.name = schedule_name;
  if not found then
    return null;
  end if;
  -- The next tick: searched a day ahead, then a month, then a year.
  select min(t) into next_at
    from (select switchyard._cron_ticks(s.cron, s.time_zone, greatest(now(), s.checked_until),
                                        greatest(now(), s.checked_until) + w, 1) as t
            from unnest(array[interval '1 day', interval '31 days', interval '366 days']) w) x;
  select jsonb_build_object('tick_at', st.tick_at, 'outcome', st.outcome, 'run_id', st.run_id,
                            'run_status', r.status, 'error', st.error)
    into last
    from switchyard.schedule_ticks st
    left join switchyard.runs r on r.run_id = st.run_id
   where st.schedule_name = s.name
   order by st.tick_at desc
   limit 1;
  return jsonb_build_object(
    'name', s.name, 'alias', s.alias, 'cron', s.cron, 'time_zone', s.time_zone,
    'input', s.input, 'overlap', s.overlap, 'catch_up', s.catch_up,
    'catch_up_limit', s.catch_up_limit, 'enabled', s.enabled, 'next_tick_at', next_at,
    'checked_until', s.checked_until, 'last_tick', last, 'missed_ticks', s.missed_ticks,
    'skipped_ticks', s.skipped_ticks, 'created_at', s.created_at, 'updated_at', s.updated_at);
end
$$;
