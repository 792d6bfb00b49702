-- Checks its arguments and the wake configuration, ticks the scheduler (run_schedules), ends
-- the waits that are due (expire_waits) and the runs past their deadline (cancel_overdue_runs),
-- takes the minute's sample of the metrics (sample_metrics),
-- each part isolated from the others, then wakes every queue function that is enabled,
-- unpaused, has no live worker and was not woken within debounce_seconds
-- (docs/design/versions.md, keep-alive): one HTTP request through pg_net to its Edge Function at
-- the base URL
-- (base_url_problem says which hosts are allowed). A live worker
-- (switchyard._worker_live) has not stopped, is not deprecated, and heart-beat within its own
-- window, or within heartbeat_window_seconds when that is larger (switchyard._heartbeat_window).
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
    perform switchyard._refuse('22023', 'integer_min', 'debounce_seconds', debounce_seconds::text,
      format(
      'keep_alive: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      context => jsonb_build_object('min', 0));
  end if;
  if heartbeat_window_seconds is null or heartbeat_window_seconds < 1 then
    perform switchyard._refuse('22023', 'integer_min', 'heartbeat_window_seconds',
      heartbeat_window_seconds::text, format(
      'keep_alive: heartbeat_window_seconds %s is invalid: use an integer of at least 1',
      coalesce(heartbeat_window_seconds::text, 'null')),
      context => jsonb_build_object('min', 1));
  end if;
  -- The bearer goes to this base URL only (docs/design/versions.md, keep-alive).
  if problem is not null then
    perform switchyard._refuse('22023', 'url_format',
      case when given is null then 'functions_base_url' else 'base_url' end, base, format(
      'keep_alive: base URL %s%s is invalid: %s', switchyard._clip(base),
      case when given is null then ' (setting functions_base_url)' else '' end, problem),
      context => jsonb_build_object('problem', problem));
  end if;
  if given is not null and configured is not null
     and switchyard._url_origin(given) <> switchyard._url_origin(configured) then
    perform switchyard._refuse('22023', 'bearer_host', 'base_url', given, format(
      'keep_alive: base URL %s is refused: the bearer goes only to the configured host %s '
      '(setting functions_base_url); pass no base_url, or change the setting',
      switchyard._clip(given), to_json(switchyard._url_origin(configured))::text),
      context => jsonb_build_object('configured', switchyard._url_origin(configured)));
  end if;
  base := rtrim(base, '/');
  if use_net then
    bearer := switchyard._functions_bearer();
    if bearer ~ '[[:space:][:cntrl:]]' then
      perform switchyard._refuse('22023', 'bearer_characters', null, null,
        'keep_alive: the bearer (Vault secret switchyard_functions_bearer or setting '
        'functions_bearer) contains whitespace or a control character; store it without them',
        context => jsonb_build_object('setting', 'functions_bearer',
          'vault_secret', 'switchyard_functions_bearer'));
    end if;
    if base is null then
      perform switchyard._refuse('22023', 'base_url_missing', 'base_url', null,
        'keep_alive: pg_net is installed but no base URL is configured: pass base_url or run '
        'select switchyard.set_setting(''functions_base_url'', ''https://<project-ref>.supabase.co'')',
        context => jsonb_build_object('setting', 'functions_base_url'));
    end if;
    if bearer is null then
      perform switchyard._refuse('22023', 'bearer_missing', null, null,
        'keep_alive: pg_net is installed but no bearer is configured: store the service role key '
        '(or the kit secret) in Vault as switchyard_functions_bearer, or run '
        'select switchyard.set_setting(''functions_bearer'', ''<key>'')',
        context => jsonb_build_object('setting', 'functions_bearer',
          'vault_secret', 'switchyard_functions_bearer'));
    end if;
  end if;

  -- The tick's timers, after every check of the arguments and the wake configuration (a
  -- refusal above does nothing at all), each part in a subtransaction of its own, so a failure
  -- of one never stops another nor the wakes (docs/design/waits.md): the scheduler
  -- (docs/design/schedules.md), so schedules run where only the keep-alive's pg_cron job is
  -- installed; the waits
  -- and sleeps whose time is up and the delayed starts that are due (docs/design/waits.md); run
  -- deadlines
  -- (docs/design/client.md); the minute's sample of the metrics
  -- (docs/design/observability.md#counters-histograms-and-levels). Within each part, each run is
  -- isolated too.
  begin
    perform switchyard.run_schedules();
  exception when others then
    raise warning 'switchyard.keep_alive: run_schedules failed: % (%)', sqlerrm, sqlstate;
  end;
  begin
    perform switchyard.expire_waits();
  exception when others then
    raise warning 'switchyard.keep_alive: expire_waits failed: % (%)', sqlerrm, sqlstate;
  end;
  begin
    perform switchyard.cancel_overdue_runs();
  exception when others then
    raise warning 'switchyard.keep_alive: cancel_overdue_runs failed: % (%)', sqlerrm, sqlstate;
  end;
  begin
    perform switchyard.sample_metrics();
  exception when others then
    raise warning 'switchyard.keep_alive: sample_metrics failed: % (%)', sqlerrm, sqlstate;
  end;

  for woken in
    with due as (
      select f.function_name
        from switchyard.worker_functions f
       where f.enabled
         and f.paused_at is null
         and (f.last_woken_at is null
              or f.last_woken_at <= switchyard.clock_now() - make_interval(secs => keep_alive.debounce_seconds))
         and not exists (
           select 1 from switchyard.workers w
            where w.function_name = f.function_name
              and switchyard._worker_live(
                    w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                    switchyard._heartbeat_window(w.heartbeat_window_seconds,
                                                 keep_alive.heartbeat_window_seconds)))
       order by f.function_name
       for update of f skip locked
    )
    update switchyard.worker_functions f
       set last_woken_at = switchyard.clock_now()
      from due
     where f.function_name = due.function_name
    returning f.function_name, f.queue_name
  loop
    target := coalesce(base, '') || '/functions/v1/' || woken.function_name;
    req := null;
    if use_net then
      -- One function's request that pg_net refuses never stops the others' (it is recorded
      -- with no request id, and tried again after the debounce).
      begin
        execute 'select net.http_post(url := $1, body := $2, headers := $3)'
          into req
          using target,
                jsonb_build_object('source', 'switchyard.keep_alive', 'function', woken.function_name),
                jsonb_build_object('Content-Type', 'application/json',
                                   'Authorization', 'Bearer ' || bearer);
      exception when others then
        raise warning 'switchyard.keep_alive: waking %: % (%)', woken.function_name, sqlerrm, sqlstate;
      end;
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
