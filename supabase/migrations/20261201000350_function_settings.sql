-- Settings and limits (docs/ARCHITECTURE.md §13): switchyard.set_setting, the limits every
-- SQL function checks (switchyard.limit_value, switchyard.limits), the rule for the keep-alive's
-- base URL, and _clip, which keeps refusals from echoing huge values.

-- A text value for a message: JSON-quoted; a value longer than `n` characters is cut there and
-- followed by its length, so a refusal names the value without echoing a megabyte of it.
create or replace function switchyard._clip(value text, n int default 80)
returns text
language sql
immutable
set search_path = ''
as $$
  select case
    when value is null then 'null'
    when char_length(value) <= n then to_json(value)::text
    else to_json(left(value, n))::text || format('... (%s characters)', char_length(value))
  end
$$;

-- One limit. Names and reasons are counted in characters and fixed; flow input and step
-- output are counted in bytes of their JSON text (jsonb's text form, UTF-8) and are settings
-- with a default of 1 MiB.
create or replace function switchyard.limit_value(name text)
returns int
language plpgsql
stable
set search_path = ''
as $$
declare
  setting text;
begin
  case name
    when 'max_function_name_chars' then
      return 63;      -- a DNS label; the longest generated name (47 + '-worker') is 54
    when 'max_reason_chars' then
      return 1000;
    when 'max_input_bytes', 'max_output_bytes' then
      select s.value into setting from switchyard.settings s where s.name = limit_value.name;
      return coalesce(setting::int, 1048576);
    else
      raise exception using errcode = '22023', message = format(
        'limit %s is unknown: use max_input_bytes, max_output_bytes, max_function_name_chars '
        'or max_reason_chars', switchyard._clip(name)),
        detail = jsonb_build_object(
          'rule', 'limit_unknown', 'argument', 'name', 'value', left(name, 200))::text;
  end case;
end
$$;

-- Every limit, as one document (the worker reads it at start-up).
create or replace function switchyard.limits()
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
  select jsonb_build_object(
    'max_input_bytes', switchyard.limit_value('max_input_bytes'),
    'max_output_bytes', switchyard.limit_value('max_output_bytes'),
    'max_function_name_chars', switchyard.limit_value('max_function_name_chars'),
    'max_reason_chars', switchyard.limit_value('max_reason_chars'))
$$;

-- Refuses a JSON value larger than its limit, naming its size and the limit. `what` says
-- whose value it is (for the message), `argument` which argument carried it.
create or replace function switchyard.assert_json_size(
  what text, argument text, value jsonb, limit_name text
)
returns void
language plpgsql
stable
set search_path = ''
as $$
declare
  size bigint := octet_length(value::text);
  max_size int := switchyard.limit_value(limit_name);
begin
  if size > max_size then
    raise exception using errcode = '22023', message = format(
      '%s is %s bytes of JSON, over the limit of %s bytes (setting %s)',
      what, size, max_size, limit_name),
      detail = jsonb_build_object(
        'rule', limit_name, 'argument', argument, 'value', left(value::text, 200),
        'size', size, 'limit', max_size)::text,
      hint = format('send a smaller value (store large data elsewhere and pass a reference), '
        'or raise the limit: select switchyard.set_setting(%L, ''<bytes>'')', limit_name);
  end if;
end
$$;

-- Why a base URL for the keep-alive's requests is refused, or null when it is fine: https://
-- only (plain http:// for a loopback host), a host and an optional port and path, nothing else:
-- no user name or password ("@"), whitespace, control characters, query or fragment. The
-- bearer goes to this host, so nothing in it may point elsewhere.
create or replace function switchyard.base_url_problem(url text)
returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  parts text[];
  host text;
begin
  if url is null then
    return 'it is missing';
  elsif char_length(url) > 2048 then
    return format('it is %s characters long; the limit is 2048', char_length(url));
  elsif url ~ '[[:space:][:cntrl:]]' then
    return 'it contains whitespace or a control character';
  elsif position('@' in url) > 0 then
    return 'it contains "@" (a user name or password, or a host in disguise)';
  end if;
  parts := regexp_match(url,
    '^(https?)://([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,5}))?(/[A-Za-z0-9._~%/-]*)?$');
  if parts is null then
    return 'use https://host[:port][/path] (letters, digits, ".", "-" in the host; no query or fragment)';
  end if;
  if coalesce(parts[5]::int, 0) > 65535 then
    return format('port %s is out of range', parts[5]);
  end if;
  host := lower(parts[2]);
  if parts[1] = 'http'
     and not (host = 'localhost' or host = '[::1]' or host ~ '^127(\.[0-9]{1,3}){3}$') then
    return 'plain http:// is allowed only for a loopback host (localhost, 127.0.0.1, [::1]): use https://';
  end if;
  return null;
end
$$;

-- The origin (scheme://host[:port], lower-cased) of a base URL that base_url_problem accepts.
create or replace function switchyard._url_origin(url text)
returns text
language sql
immutable
set search_path = ''
as $$
  select lower(substring(url from '^https?://[^/]+'))
$$;

-- Sets (or, with a null value, removes) one setting: functions_base_url and functions_bearer
-- (the keep-alive), max_input_bytes and max_output_bytes (the size limits, 64 KiB to 100 MiB).
create or replace function switchyard.set_setting(name text, value text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  problem text;
begin
  if name is null
     or name not in ('functions_base_url', 'functions_bearer', 'max_input_bytes', 'max_output_bytes') then
    raise exception using errcode = '22023', message = format(
      'setting %s is unknown: use functions_base_url, functions_bearer, max_input_bytes or '
      'max_output_bytes', switchyard._clip(name)),
      detail = jsonb_build_object(
        'rule', 'setting_unknown', 'argument', 'name', 'value', left(name, 200))::text;
  end if;
  if value is not null then
    if name = 'functions_base_url' then
      problem := switchyard.base_url_problem(value);
    elsif name = 'functions_bearer' and value ~ '[[:space:][:cntrl:]]' then
      problem := 'a bearer contains no whitespace or control characters';
    elsif name = 'functions_bearer' and char_length(value) > 8192 then
      problem := format('it is %s characters long; the limit is 8192', char_length(value));
    elsif name in ('max_input_bytes', 'max_output_bytes')
          and (case when value ~ '^[0-9]{1,9}$' then value::int not between 65536 and 104857600
                    else true end) then
      problem := 'use a number of bytes from 65536 (64 KiB) to 104857600 (100 MiB)';
    end if;
    if problem is not null then
      raise exception using errcode = '22023', message = format(
        'setting %s %s is invalid: %s', name,
        case when name = 'functions_bearer' then '(value not shown)' else switchyard._clip(value) end,
        problem),
        detail = jsonb_build_object(
          'rule', 'setting_' || name, 'argument', 'value',
          'value', case when name = 'functions_bearer' then null else left(value, 200) end,
          'setting', name, 'problem', problem)::text;
    end if;
  end if;
  if value is null then
    delete from switchyard.settings s where s.name = set_setting.name;
  else
    insert into switchyard.settings as s (name, value) values (set_setting.name, set_setting.value)
    on conflict on constraint settings_pkey do update set value = excluded.value, updated_at = now();
  end if;
end
$$;
