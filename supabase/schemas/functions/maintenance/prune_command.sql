-- The SQL a cron job runs for retention. Useful on its own where pg_cron lives in another
-- database (cron.schedule_in_database(name, schedule, <this>, db)).
create or replace function switchyard.prune_command(
  older_than interval default '7 days',
  batch_size int default 1000
)
returns text
language plpgsql
immutable
security definer
set search_path = ''
as $$
begin
  if older_than is null or older_than < interval '1 hour' then
    perform switchyard._refuse('22023', 'interval_min', 'older_than', older_than::text, format(
      'prune_command: older_than %s is invalid: use an interval of at least 1 hour',
      coalesce(older_than::text, 'null')),
      context => jsonb_build_object('min', '1 hour'));
  end if;
  if batch_size is null or batch_size < 1 or batch_size > 10000 then
    perform switchyard._refuse('22023', 'integer_range', 'batch_size', batch_size::text, format(
      'prune_command: batch_size %s is invalid: use an integer from 1 to 10000',
      coalesce(batch_size::text, 'null')),
      context => jsonb_build_object('min', 1, 'max', 10000));
  end if;
  return format('select runs from switchyard.prune(%L::interval, %s)', older_than::text, batch_size);
end
$$;
