-- Keep-alive (docs/ARCHITECTURE.md §6, last bullet): a pg_cron job wakes every queue
-- function that is enabled, unpaused and has no live worker, at most once per
-- debounce window. A wake is an HTTP POST to the function's gateway path
-- (/functions/v1/<name>) through pg_net when pg_net is installed; every wake is
-- also recorded in switchyard.wake_requests. Without pg_net (local runs, tests)
-- the wake is only recorded (via = 'recorded'), through the same SQL path.
--
-- pg_net, pg_cron and Supabase Vault are all optional: they are reached through
-- dynamic SQL only, so this file compiles on a server that has none of them.

-- Operator settings the keep-alive reads. Secrets belong in Supabase Vault when
-- it is present (a secret named 'switchyard_functions_bearer' wins over the row
-- here); the table is the fallback for servers without Vault.
create table switchyard.settings (
  name text primary key
    check (name in ('functions_base_url', 'functions_bearer')),
  value text not null,
  updated_at timestamptz not null default now()
);

-- Every wake the keep-alive asked for: the audit trail, and the only effect when
-- pg_net is absent.
create table switchyard.wake_requests (
  wake_id bigint generated always as identity primary key,
  function_name text not null references switchyard.worker_functions,
  queue_name text not null,
  url text not null,                        -- absolute with a base URL, else the gateway path
  via text not null check (via in ('pg_net', 'recorded')),
  request_id bigint,                        -- pg_net's request id (net._http_response)
  requested_at timestamptz not null default now()
);
create index wake_requests_by_function on switchyard.wake_requests (function_name, requested_at);

-- Sets (or, with a null value, removes) one keep-alive setting.
create or replace function switchyard.set_setting(name text, value text)
returns void
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if name is null or name not in ('functions_base_url', 'functions_bearer') then
    raise exception using errcode = '22023', message = format(
      'setting %s is unknown: use functions_base_url or functions_bearer',
      coalesce(to_json(name)::text, 'null')),
      detail = jsonb_build_object(
        'rule', 'setting_unknown', 'argument', 'name', 'value', left(name, 200))::text;
  end if;
  if name = 'functions_base_url' and value is not null and value !~ '^https?://[^/\s]+' then
    raise exception using errcode = '22023', message = format(
      'setting functions_base_url %s is invalid: use an http(s) URL such as https://<project-ref>.supabase.co',
      to_json(value)::text),
      detail = jsonb_build_object(
        'rule', 'url_format', 'argument', 'value', 'value', left(value, 200),
        'name', 'functions_base_url')::text;
  end if;
  if value is null then
    delete from switchyard.settings s where s.name = set_setting.name;
  else
    insert into switchyard.settings as s (name, value) values (set_setting.name, set_setting.value)
    on conflict on constraint settings_pkey do update set value = excluded.value, updated_at = now();
  end if;
end
$$;

-- The bearer a wake request carries: the Vault secret 'switchyard_functions_bearer'
-- when Vault is installed and holds it, else the functions_bearer setting.
create or replace function switchyard._functions_bearer()
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  secret text;
begin
  if to_regclass('vault.decrypted_secrets') is not null then
    execute 'select decrypted_secret from vault.decrypted_secrets where name = $1 limit 1'
      into secret using 'switchyard_functions_bearer';
  end if;
  return coalesce(secret, (select s.value from switchyard.settings s where s.name = 'functions_bearer'));
end
$$;

create or replace function switchyard._pg_net_available()
returns boolean
language sql
stable
set search_path = ''
as $$
  select exists (
    select 1 from pg_catalog.pg_proc p
      join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     where n.nspname = 'net' and p.proname = 'http_post')
$$;

-- Wakes every queue function that is enabled, unpaused, has no live worker and was not
-- woken within debounce_seconds. A live worker (switchyard._worker_live) has not stopped,
-- is not deprecated, and heart-beat within heartbeat_window_seconds (a worker that
-- crashed without stopping stops counting once its heartbeat is that old).
--
-- Concurrent calls (two cron jobs, a manual call during a cron run) wake each
-- queue function once: a caller locks the rows it wakes and skips rows locked by anyone
-- else (another keep-alive, a fence, a registering worker), and a row it does lock
-- is re-checked at its latest version, so a wake committed meanwhile debounces it.
-- Skipping instead of waiting also means the keep-alive never deadlocks a fence.
--
-- Returns the wakes it made. Raises when pg_net is installed but no base URL or
-- bearer is configured, so a misconfigured cron job fails visibly in
-- cron.job_run_details instead of silently waking nothing.
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
  base text := rtrim(coalesce(nullif(trim(keep_alive.base_url), ''),
    (select s.value from switchyard.settings s where s.name = 'functions_base_url')), '/');
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
  if base is not null and base !~ '^https?://[^/\s]+' then
    raise exception using errcode = '22023', message = format(
      'keep_alive: base URL %s is invalid: use an http(s) URL such as https://<project-ref>.supabase.co',
      to_json(base)::text),
      detail = jsonb_build_object(
        'rule', 'url_format', 'argument', 'base_url', 'value', left(base, 200))::text;
  end if;
  if use_net then
    bearer := switchyard._functions_bearer();
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

-- The SQL a cron job runs for the keep-alive. Useful on its own where pg_cron
-- lives in another database (cron.schedule_in_database(name, schedule, <this>, db)).
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
begin
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

-- Creates or updates the pg_cron job 'switchyard_keep_alive' in this database and
-- returns its job id. pg_cron accepts cron syntax ('* * * * *', every minute) and,
-- from pg_cron 1.5, intervals such as '30 seconds'.
create or replace function switchyard.schedule_keep_alive(
  schedule text default '* * * * *',
  base_url text default null,
  debounce_seconds int default 30
)
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  job bigint;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    raise exception using errcode = 'SY020', message = format(
      'schedule_keep_alive: pg_cron is not installed in database %s', to_json(current_database())::text),
      detail = jsonb_build_object('database', current_database())::text,
      hint = 'on Supabase enable pg_cron (Database > Extensions); elsewhere pg_cron lives in the '
             'database named by cron.database_name: there run select cron.schedule_in_database('
             '''switchyard_keep_alive'', ''* * * * *'', <switchyard.keep_alive_command()>, <this database>)';
  end if;
  if schedule is null or trim(schedule) = '' then
    raise exception using errcode = '22023', message =
      'schedule_keep_alive: schedule is missing: use cron syntax such as ''* * * * *''',
      detail = jsonb_build_object(
        'rule', 'schedule_missing', 'argument', 'schedule', 'value', left(schedule, 200))::text;
  end if;
  -- pg_cron updates a job of the same name (and user) instead of adding another.
  execute 'select cron.schedule($1, $2, $3)' into job
    using 'switchyard_keep_alive', schedule, switchyard.keep_alive_command(base_url, debounce_seconds);
  return job;
end
$$;

-- Removes the keep-alive job; false when there was none.
create or replace function switchyard.unschedule_keep_alive()
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  removed boolean := false;
begin
  if not exists (select 1 from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    return false;
  end if;
  execute 'select exists (select 1 from cron.job where jobname = $1)' into removed
    using 'switchyard_keep_alive';
  if removed then
    execute 'select cron.unschedule($1)' using 'switchyard_keep_alive';
  end if;
  return removed;
end
$$;

-- Privileges as in the grants migration: nothing for PUBLIC (or PostgREST's
-- anon/authenticated roles); the service role may call the API and read state.
revoke all on switchyard.settings, switchyard.wake_requests from public;
revoke execute on function
  switchyard.set_setting(text, text),
  switchyard._functions_bearer(),
  switchyard._pg_net_available(),
  switchyard.keep_alive(text, int, int),
  switchyard.keep_alive_command(text, int),
  switchyard.schedule_keep_alive(text, text, int),
  switchyard.unschedule_keep_alive()
from public;

do $$
begin
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    grant select on switchyard.settings, switchyard.wake_requests to service_role;
    grant execute on function
      switchyard.set_setting(text, text),
      switchyard.keep_alive(text, int, int),
      switchyard.keep_alive_command(text, int),
      switchyard.schedule_keep_alive(text, text, int),
      switchyard.unschedule_keep_alive()
    to service_role;
  end if;
end
$$;
