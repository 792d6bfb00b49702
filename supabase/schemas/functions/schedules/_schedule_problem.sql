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
    raise exception using errcode = '22023', message = format(
      'schedule name %s is invalid: 1-63 characters, lower-case letters, digits, _ and -, '
      'starting with a letter', coalesce(switchyard._clip(name), 'null')),
      detail = jsonb_build_object('rule', 'schedule_name_invalid', 'argument', 'name',
                                  'value', left(name, 200))::text;
  end if;
  perform switchyard._cron_parse(cron);
  if time_zone is null then
    raise exception using errcode = '22023', message =
      'time zone is null: use an IANA region name such as ''Europe/Berlin'', or ''UTC''',
      detail = jsonb_build_object('rule', 'time_zone_unknown', 'argument', 'time_zone',
                                  'value', null)::text;
  end if;
  if time_zone not in ('UTC', 'Etc/UTC')
     and time_zone !~ ('^(Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian'
                       '|Pacific)(/[A-Z][A-Za-z0-9_+-]{1,30}){1,2}$') then
    raise exception using errcode = '22023', message = format(
      'time zone %s is not a region name: a POSIX rule, an offset or an abbreviation misleads '
      '(POSIX reads UTC+5 as 5 hours west of UTC); use an IANA region name such as '
      '''Europe/Berlin'', or ''UTC''', switchyard._clip(time_zone)),
      detail = jsonb_build_object('rule', 'time_zone_unknown', 'argument', 'time_zone',
                                  'value', left(time_zone, 200))::text;
  end if;
  begin
    perform switchyard.clock_now() at time zone time_zone;
  exception when others then
    raise exception using errcode = '22023', message = format(
      'time zone %s is unknown: use an IANA region name such as ''Europe/Berlin'', or ''UTC''',
      switchyard._clip(time_zone)),
      detail = jsonb_build_object('rule', 'time_zone_unknown', 'argument', 'time_zone',
                                  'value', left(time_zone, 200))::text;
  end;
  perform switchyard.resolve_flow(alias);
  if input is null then
    raise exception using errcode = '22023', message =
      'schedule input is null: give a JSON value (''{}'' for none)',
      detail = jsonb_build_object('rule', 'input_null', 'argument', 'input', 'value', null)::text;
  end if;
  too_big := switchyard._json_size_problem(input, 'max_input_bytes');
  if too_big is not null then
    raise exception using errcode = '22023', message = format(
      'schedule input is %s bytes of JSON, over the limit of %s bytes (setting max_input_bytes)',
      too_big ->> 'size', too_big ->> 'limit'),
      detail = jsonb_build_object('rule', 'input_too_large', 'argument', 'input',
                                  'value', too_big ->> 'excerpt', 'size', too_big -> 'size',
                                  'limit', too_big -> 'limit')::text;
  end if;
  if overlap is null or overlap not in ('skip', 'queue', 'cancel_previous') then
    raise exception using errcode = '22023', message = format(
      'overlap %s is invalid: skip, queue or cancel_previous',
      coalesce(to_json(left(overlap, 200))::text, 'null')),
      detail = jsonb_build_object('rule', 'overlap_invalid', 'argument', 'overlap',
                                  'value', left(overlap, 200))::text;
  end if;
  if catch_up is null or catch_up not in ('none', 'latest', 'all') then
    raise exception using errcode = '22023', message = format(
      'catch_up %s is invalid: none, latest or all',
      coalesce(to_json(left(catch_up, 200))::text, 'null')),
      detail = jsonb_build_object('rule', 'catch_up_invalid', 'argument', 'catch_up',
                                  'value', left(catch_up, 200))::text;
  end if;
  if catch_up_limit is null or catch_up_limit not between 1 and 1000 then
    raise exception using errcode = '22023', message = format(
      'catch_up_limit %s is out of range 1-1000', coalesce(catch_up_limit::text, 'null')),
      detail = jsonb_build_object('rule', 'catch_up_limit_range', 'argument', 'catch_up_limit',
                                  'value', catch_up_limit::text)::text;
  end if;
end
$$;
