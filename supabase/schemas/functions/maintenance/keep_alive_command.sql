-- The SQL a keep-alive cron job runs (select switchyard.keep_alive(...)) with the base URL and
-- debounce checked first, so a bad job is refused when it is scheduled, not every minute after.
-- Useful on its own where pg_cron lives in another database.
create or replace function switchyard.keep_alive_command(
  base_url text default null,
  debounce_seconds int default 30
)
returns text
language plpgsql
stable      -- base_url_problem reads functions_hosts
security definer
set search_path = ''
as $$
declare
  problem text := case when nullif(base_url, '') is not null then switchyard.base_url_problem(base_url) end;
begin
  if problem is not null then
    perform switchyard._refuse('22023', 'url_format', 'base_url', base_url, format(
      'keep_alive_command: base URL %s is invalid: %s', switchyard._clip(base_url), problem),
      context => jsonb_build_object('problem', problem));
  end if;
  if debounce_seconds is null or debounce_seconds < 0 then
    perform switchyard._refuse('22023', 'integer_min', 'debounce_seconds', debounce_seconds::text,
      format(
      'keep_alive_command: debounce_seconds %s is invalid: use an integer of at least 0',
      coalesce(debounce_seconds::text, 'null')),
      context => jsonb_build_object('min', 0));
  end if;
  return format('select count(*) from switchyard.keep_alive(base_url => %s, debounce_seconds => %s)',
                coalesce(quote_literal(base_url), 'null'), debounce_seconds);
end
$$;
