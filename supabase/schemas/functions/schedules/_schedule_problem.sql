-- Checks a schedule's fields and raises the first refusal (22023, rule named): the name, the
-- cron expression, the time zone, the target alias (it must resolve now), the input (JSON, at
-- most max_input_bytes), the overlap and catch-up policies and the catch-up bound. A time zone
-- is 'UTC' or an IANA region name (Area/Location, e.g. 'Europe/Berlin',
-- 'America/Argentina/Buenos_Aires'; 'Etc/UTC') that PostgreSQL knows: PostgreSQL also takes a
-- POSIX rule ('UTC+5', which POSIX reads as five hours *west* of UTC), abbreviations ('EST',
-- 'CET') and 'Etc/GMT+5' (also west), whose meaning a reader gets wrong, so they are refused.
create or replace function switchyard._schedule_problem(
  name text, alias text, cron text, time_zone text, input jsonb, overlap text, catch_up text,
  catch_up_limit int
)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  too_big jsonb;
begin
  if name is null or name !~ '^[a-z][a-z0-9_-]{0,62}$' then
    perform switchyard._refuse('22023', 'schedule_name_invalid', 'name', name, format(
      'schedule name %s is invalid: 1-63 characters, lower-case letters, digits, _ and -, '
      'starting with a letter', coalesce(switchyard._clip(name), 'null')));
  end if;
  perform switchyard._cron_parse(cron);
  if time_zone is null then
    perform switchyard._refuse('22023', 'time_zone_unknown', 'time_zone', null,
      'time zone is null: use an IANA region name such as ''Europe/Berlin'', or ''UTC''');
  end if;
  if time_zone not in ('UTC', 'Etc/UTC')
     and time_zone !~ ('^(Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian'
                       '|Pacific)(/[A-Z][A-Za-z0-9_+-]{1,30}){1,2}$') then
    perform switchyard._refuse('22023', 'time_zone_unknown', 'time_zone', time_zone, format(
      'time zone %s is not a region name: a POSIX rule, an offset or an abbreviation misleads '
      '(POSIX reads UTC+5 as 5 hours west of UTC); use an IANA region name such as '
      '''Europe/Berlin'', or ''UTC''', switchyard._clip(time_zone)));
  end if;
  begin
    perform switchyard.clock_now() at time zone time_zone;
  exception when others then
    perform switchyard._refuse('22023', 'time_zone_unknown', 'time_zone', time_zone, format(
      'time zone %s is unknown: use an IANA region name such as ''Europe/Berlin'', or ''UTC''',
      switchyard._clip(time_zone)));
  end;
  perform switchyard.resolve_flow(alias);
  if input is null then
    perform switchyard._refuse('22023', 'input_null', 'input', null,
      'schedule input is null: give a JSON value (''{}'' for none)');
  end if;
  too_big := switchyard._json_size_problem(input, 'max_input_bytes');
  if too_big is not null then
    perform switchyard._refuse('22023', 'input_too_large', 'input', too_big ->> 'excerpt', format(
      'schedule input is %s bytes of JSON, over the limit of %s bytes (setting max_input_bytes)',
      too_big ->> 'size', too_big ->> 'limit'),
      context => jsonb_build_object('size', too_big -> 'size', 'limit', too_big -> 'limit'));
  end if;
  if overlap is null or overlap not in ('skip', 'queue', 'cancel_previous') then
    perform switchyard._refuse('22023', 'overlap_invalid', 'overlap', overlap, format(
      'overlap %s is invalid: skip, queue or cancel_previous',
      coalesce(to_json(left(overlap, 200))::text, 'null')));
  end if;
  if catch_up is null or catch_up not in ('none', 'latest', 'all') then
    perform switchyard._refuse('22023', 'catch_up_invalid', 'catch_up', catch_up, format(
      'catch_up %s is invalid: none, latest or all',
      coalesce(to_json(left(catch_up, 200))::text, 'null')));
  end if;
  if catch_up_limit is null or catch_up_limit not between 1 and 1000 then
    perform switchyard._refuse('22023', 'catch_up_limit_range', 'catch_up_limit',
      catch_up_limit::text, format(
      'catch_up_limit %s is out of range 1-1000', coalesce(catch_up_limit::text, 'null')));
  end if;
end
$$;
