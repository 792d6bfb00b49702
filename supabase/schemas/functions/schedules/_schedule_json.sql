-- A schedule as the API answers it: its fields, its next tick, and its latest tick's run.
create or replace function switchyard._schedule_json(schedule_name text)
returns jsonb
language plpgsql
stable
set search_path = ''
as $$
declare
  s switchyard.schedules;
  spec jsonb;
  from_at timestamptz;
  horizon timestamptz;
  day date;
  next_at timestamptz;
  last jsonb;
begin
  select * into s from switchyard.schedules x where x.name = schedule_name;
  if not found then
    return null;
  end if;
  -- The next tick, at most 366 days ahead. _cron_ticks scans every local day of its window (a
  -- year of days cost up to a second per schedule, and the dashboard lists them every few
  -- seconds), so the expression is parsed once here to find the days whose month and day
  -- fields match (the day rule of _cron_ticks), and _cron_ticks is asked only about the first
  -- of them that has a tick left (today's may all be past), about that day (a time in a
  -- daylight-saving gap falls later, possibly past midnight).
  spec := switchyard._cron_parse(s.cron);
  from_at := greatest(switchyard.clock_now(), s.checked_until);
  horizon := from_at + interval '366 days';
  for day in
    select d.day::date
      from generate_series(((from_at at time zone s.time_zone)::date)::timestamp,
                           ((horizon at time zone s.time_zone)::date)::timestamp,
                           interval '1 day') as d(day)
     where (spec -> 'month') @> to_jsonb(extract(month from d.day)::int)
       and case
             when (spec ->> 'dom_star')::boolean and (spec ->> 'dow_star')::boolean then true
             when (spec ->> 'dom_star')::boolean then
               (spec -> 'dow') @> to_jsonb(extract(dow from d.day)::int)
             when (spec ->> 'dow_star')::boolean then
               (spec -> 'dom') @> to_jsonb(extract(day from d.day)::int)
             else (spec -> 'dow') @> to_jsonb(extract(dow from d.day)::int)
               or (spec -> 'dom') @> to_jsonb(extract(day from d.day)::int)
           end
     order by d.day
  loop
    select min(t) into next_at
      from switchyard._cron_ticks(
             s.cron, s.time_zone,
             greatest(from_at, (day::timestamp at time zone s.time_zone) - interval '1 second'),
             least(horizon, ((day + 1)::timestamp at time zone s.time_zone) + interval '3 hours'),
             1) t;
    exit when next_at is not null;
  end loop;
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
