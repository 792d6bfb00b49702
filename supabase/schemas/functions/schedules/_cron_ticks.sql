-- The instants after `after` and at most `until` that the cron expression names in time zone
-- `tz`, in order, at most `max_ticks`. Each matching local time is one instant: a local time in
-- a daylight-saving gap (it does not exist) is taken with the offset before the change, so it
-- falls the gap's length later (02:30 in Europe/Berlin on the last Sunday of March runs at
-- 03:30 CEST); a repeated local time (the hour that occurs twice in autumn) with the offset
-- after the change, so it runs once. Two local times that name the same instant run once.
create or replace function switchyard._cron_ticks(
  expr text, tz text, after timestamptz, until timestamptz, max_ticks int
)
returns setof timestamptz
language sql
stable
set search_path = ''
as $$
  -- Parsed once per call (materialized): inlined, the parse would run again for every day.
  with spec as materialized (select switchyard._cron_parse(expr) as s)
  select distinct x.t
    from spec,
         generate_series(((after at time zone tz)::date)::timestamp,
                         ((until at time zone tz)::date)::timestamp, interval '1 day') as d(day)
   cross join lateral (select (d.day + make_interval(hours => h::int, mins => mi::int))
                                at time zone tz as t
                         from jsonb_array_elements_text(spec.s -> 'hour') h,
                              jsonb_array_elements_text(spec.s -> 'minute') mi) x
   where (spec.s -> 'month') @> to_jsonb(extract(month from d.day)::int)
     and case
           when (spec.s ->> 'dom_star')::boolean and (spec.s ->> 'dow_star')::boolean then true
           when (spec.s ->> 'dom_star')::boolean then
             (spec.s -> 'dow') @> to_jsonb(extract(dow from d.day)::int)
           when (spec.s ->> 'dow_star')::boolean then
             (spec.s -> 'dom') @> to_jsonb(extract(day from d.day)::int)
           else (spec.s -> 'dow') @> to_jsonb(extract(dow from d.day)::int)
             or (spec.s -> 'dom') @> to_jsonb(extract(day from d.day)::int)
         end
     and x.t > after and x.t <= until
   order by x.t
   limit max_ticks
$$;
