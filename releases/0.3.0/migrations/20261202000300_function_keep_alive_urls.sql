-- The keep-alive's base URL and bearer (docs/ARCHITECTURE.md §6): https:// only (plain http://
-- for a loopback host), no user name or password, whitespace, control characters, query or
-- fragment; the bearer goes to the configured host only and carries no whitespace (a line break
-- would add headers). set_setting also takes the size limits of docs/ARCHITECTURE.md §13.

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
          'rule', case when name = 'functions_base_url' then 'url_format' else 'setting_value' end,
          'argument', 'value',
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

-- Wakes every queue function that is enabled, unpaused, has no live worker and was not woken
-- within debounce_seconds (20261201001300_function_keep_alive.sql has the full description);
-- the base URL as above.
create or replace function switchyard.keep_alive(
  base_url text default null,
  debounce_seconds int default 30,
  heartbeat_window_seconds int default 15
)
returns table (function_name text, queue_name text, url text, via text, request_id bigint)
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  use_net boolean := switchyard._pg_net_available();
  configured text := (select s.value from switchyard.settings s where s.name = 'functions_base_url');
  given text := nullif(keep_alive.base_url, '');
  base text := coalesce(given, configured);
  problem text := case when base is not null then switchyard.base_url_problem(base) end;
  bearer text;
  woken record;
  target text;
  req bigint;
begin
  if debounce_seconds is null or debounce_seconds < 0 then
    raise exception using errcode = '22023', message = format(
      'keep_alive: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'debounce_seconds',
        'value', debounce_seconds::text, 'min', 0)::text;
  end if;
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    raise exception using errcode = '22023', message = format(
      'keep_alive: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'heartbeat_window_seconds',
        'value', heartbeat_window_seconds::text, 'min', 1)::text;
  end if;
  -- The bearer goes to this base URL only (docs/ARCHITECTURE.md §6, keep-alive).
  if problem is not null then
    raise exception using errcode = '22023', message = format(
      'keep_alive: base URL %s%s is invalid: %s', switchyard._clip(base),
      case when given is null then ' (setting functions_base_url)' else '' end, problem),
      detail = jsonb_build_object(
        'rule', 'url_format',
        'argument', case when given is null then 'functions_base_url' else 'base_url' end,
        'value', left(base, 200), 'problem', problem)::text;
  end if;
  if given is not null and configured is not null
     and switchyard._url_origin(given) <> switchyard._url_origin(configured) then
    raise exception using errcode = '22023', message = format(
      'keep_alive: base URL %s is refused: the bearer goes only to the configured host %s '
      '(setting functions_base_url); pass no base_url, or change the setting',
      switchyard._clip(given), to_json(switchyard._url_origin(configured))::text),
      detail = jsonb_build_object(
        'rule', 'bearer_host', 'argument', 'base_url', 'value', left(given, 200),
        'configured', switchyard._url_origin(configured))::text;
  end if;
  base := rtrim(base, '/');
  if use_net then
    bearer := switchyard._functions_bearer();
    if bearer ~ '[[:space:][:cntrl:]]' then
      raise exception using errcode = '22023', message =
        'keep_alive: the bearer (Vault secret switchyard_functions_bearer or setting '
        'functions_bearer) contains whitespace or a control character; store it without them',
        detail = jsonb_build_object(
          'rule', 'bearer_characters', 'argument', null, 'value', null,
          'setting', 'functions_bearer', 'vault_secret', 'switchyard_functions_bearer')::text;
    end if;
    if base is null then
      raise exception using errcode = '22023', message =
        'keep_alive: pg_net is installed but no base URL is configured: pass base_url or run '
        'select switchyard.set_setting(''functions_base_url'', ''https://<project-ref>.supabase.co'')',
        detail = jsonb_build_object(
          'rule', 'base_url_missing', 'argument', 'base_url', 'value', null,
          'setting', 'functions_base_url')::text;
    end if;
    if bearer is null then
      raise exception using errcode = '22023', message =
        'keep_alive: pg_net is installed but no bearer is configured: store the service role key '
        '(or the kit secret) in Vault as switchyard_functions_bearer, or run '
        'select switchyard.set_setting(''functions_bearer'', ''<key>'')',
        detail = jsonb_build_object(
          'rule', 'bearer_missing', 'argument', null, 'value', null,
          'setting', 'functions_bearer', 'vault_secret', 'switchyard_functions_bearer')::text;
    end if;
  end if;

  for woken in
    with due as (
      select f.function_name
        from switchyard.worker_functions f
       where f.enabled
         and f.paused_at is null
         and (f.last_woken_at is null
              or f.last_woken_at <= now() - make_interval(secs => keep_alive.debounce_seconds))
         and not exists (
           select 1 from switchyard.workers w
            where w.function_name = f.function_name
              and switchyard._worker_live(w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                                          keep_alive.heartbeat_window_seconds))
       order by f.function_name
       for update of f skip locked
    )
    update switchyard.worker_functions f
       set last_woken_at = now()
      from due
     where f.function_name = due.function_name
    returning f.function_name, f.queue_name
  loop
    target := coalesce(base, '') || '/functions/v1/' || woken.function_name;
    req := null;
    if use_net then
      execute 'select net.http_post(url := $1, body := $2, headers := $3)'
        into req
        using target,
              jsonb_build_object('source', 'switchyard.keep_alive', 'function', woken.function_name),
              jsonb_build_object('Content-Type', 'application/json',
                                 'Authorization', 'Bearer ' || bearer);
    end if;
    insert into switchyard.wake_requests (function_name, queue_name, url, via, request_id)
    values (woken.function_name, woken.queue_name, target,
            case when use_net then 'pg_net' else 'recorded' end, req);
    function_name := woken.function_name;
    queue_name := woken.queue_name;
    url := target;
    via := case when use_net then 'pg_net' else 'recorded' end;
    request_id := req;
    return next;
  end loop;
end
$$;

-- The SQL a cron job runs for the keep-alive; its base URL as above.
create or replace function switchyard.keep_alive_command(
  base_url text default null,
  debounce_seconds int default 30
)
returns text
language plpgsql
immutable
security definer
set search_path = ''
as $$
declare
  problem text := case when nullif(base_url, '') is not null then switchyard.base_url_problem(base_url) end;
begin
  if problem is not null then
    raise exception using errcode = '22023', message = format(
      'keep_alive_command: base URL %s is invalid: %s', switchyard._clip(base_url), problem),
      detail = jsonb_build_object(
        'rule', 'url_format', 'argument', 'base_url', 'value', left(base_url, 200),
        'problem', problem)::text;
  end if;
  if debounce_seconds is null or debounce_seconds < 0 then
    raise exception using errcode = '22023', message = format(
      'keep_alive_command: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'integer_min', 'argument', 'debounce_seconds',
        'value', debounce_seconds::text, 'min', 0)::text;
  end if;
  return format('select count(*) from switchyard.keep_alive(base_url => %s, debounce_seconds => %s)',
                coalesce(quote_literal(base_url), 'null'), debounce_seconds);
end
$$;

revoke execute on function
  switchyard.base_url_problem(text),
  switchyard._url_origin(text)
from public;
