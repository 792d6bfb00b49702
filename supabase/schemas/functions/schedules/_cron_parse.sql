-- A cron expression (five fields: minute hour day-of-month month day-of-week) as the sets it
-- allows: {"minute": [...], "hour": [...], "dom": [...], "month": [...], "dow": [...],
-- "dom_star", "dow_star"}. A field is *, a value, a range a-b, a step */n or a-b/n, or a list
-- of those separated by commas; months may be jan-dec, days of the week sun-sat, and 7 is
-- Sunday as 0 is. When both day fields are restricted, a day matches either (as cron does).
-- An invalid expression is refused with the field, the part and the rule (22023 cron_invalid);
-- one over 1000 characters before it is read (22023 cron_too_long: every field listed value by
-- value takes under 400).
create or replace function switchyard._cron_parse(expr text)
returns jsonb
language plpgsql
immutable
set search_path = ''
as $$
declare
  fields text[] := regexp_split_to_array(trim(coalesce(expr, '')), '\s+');
  names constant text[] := array['minute', 'hour', 'day of month', 'month', 'day of week'];
  keys constant text[] := array['minute', 'hour', 'dom', 'month', 'dow'];
  lows constant int[] := array[0, 0, 1, 1, 0];
  highs constant int[] := array[59, 23, 31, 12, 7];
  months constant text[] := array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep',
                                  'oct', 'nov', 'dec'];
  days constant text[] := array['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
  result jsonb := '{}';
  part text;
  m text[];
  lo int;
  hi int;
  step int;
  val int;
  allowed int[];
  problem text;
  f int;
begin
  if length(expr) > 1000 then
    perform switchyard._refuse('22023', 'cron_too_long', 'cron', expr, format(
      'cron expression %s... is %s characters, over the limit of 1000: use ranges and steps '
      '(0-30/5) instead of long lists', to_json(left(expr, 60))::text, length(expr)),
      context => jsonb_build_object('size', length(expr), 'limit', 1000));
  end if;
  if array_length(fields, 1) is distinct from 5 or fields[1] = '' then
    problem := format('it has %s fields, cron needs five (minute hour day-of-month month '
                      'day-of-week), e.g. ''0 3 * * *''',
                      case when fields[1] = '' then 0 else array_length(fields, 1) end);
  end if;
  f := 1;
  while problem is null and f <= 5 loop
    allowed := '{}';
    foreach part in array string_to_array(lower(fields[f]), ',') loop
      m := regexp_match(part, '^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/([0-9]+))?$');
      if m is null then
        problem := format('%s field part %s is not a value, a range a-b, * or a step /n',
                          names[f], to_json(part)::text);
        exit;
      end if;
      if length(m[3]) > 4 then
        problem := format('%s field part %s: step %s is out of range 1-%s', names[f],
                          to_json(part)::text, left(m[3], 20), highs[f]);
        exit;
      end if;
      step := coalesce(m[3]::int, 1);
      if step < 1 then
        problem := format('%s field part %s has step 0', names[f], to_json(part)::text);
        exit;
      end if;
      if m[1] = '*' then
        if m[2] is not null then
          problem := format('%s field part %s: * takes no range', names[f], to_json(part)::text);
          exit;
        end if;
        lo := lows[f];
        hi := case when f = 5 then 6 else highs[f] end;
      else
        for i in 1..2 loop
          continue when m[i] is null;
          if m[i] ~ '^[0-9]+$' and length(m[i]) <= 4 then
            val := m[i]::int;
          elsif f = 4 and array_position(months, m[i]) is not null then
            val := array_position(months, m[i]);
          elsif f = 5 and array_position(days, m[i]) is not null then
            val := array_position(days, m[i]) - 1;
          else
            problem := format('%s field part %s: %s is not a %s', names[f], to_json(part)::text,
                              to_json(m[i])::text, names[f]);
            exit;
          end if;
          if val < lows[f] or val > highs[f] then
            problem := format('%s field part %s: %s is out of range %s-%s', names[f],
                              to_json(part)::text, val, lows[f], highs[f]);
            exit;
          end if;
          if i = 1 then lo := val; else hi := val; end if;
        end loop;
        exit when problem is not null;
        if m[2] is null then
          hi := case when m[3] is null then lo else highs[f] end;
        end if;
        if hi < lo then
          problem := format('%s field part %s: the range runs backwards', names[f],
                            to_json(part)::text);
          exit;
        end if;
      end if;
      allowed := allowed || array(select g from generate_series(lo, hi, step) g);
    end loop;
    if problem is null then
      if f = 5 then
        allowed := array(select case when v = 7 then 0 else v end from unnest(allowed) v);
      end if;
      result := result || jsonb_build_object(keys[f],
        (select jsonb_agg(distinct v order by v) from unnest(allowed) v));
    end if;
    f := f + 1;
  end loop;
  if problem is not null then
    perform switchyard._refuse('22023', 'cron_invalid', 'cron', expr, format(
      'cron expression %s is invalid: %s', to_json(left(coalesce(expr, ''), 200))::text, problem));
  end if;
  return result || jsonb_build_object('dom_star', fields[3] like '*%',
                                      'dow_star', fields[5] like '*%');
end
$$;
