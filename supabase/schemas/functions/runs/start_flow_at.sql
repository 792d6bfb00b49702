-- Starts a run as start_flow does with start_at (the same idempotent run_id, owner and
-- refusals), whose steps start at start_at instead of now (docs/design/waits.md): the run is
-- 'started' at
-- once (it keeps the version the alias names now, and counts as open for drain), its steps
-- begin on the first switchyard.expire_waits at or after start_at (the keep-alive tick), so up
-- to one tick late. A time not in the future starts at once; at most 365 days ahead.
create or replace function switchyard.start_flow_at(
  flow_or_alias text, input jsonb, start_at timestamptz, run_id uuid default null,
  owner uuid default null
)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  if start_at is null or start_at > switchyard.clock_now() + interval '365 days' then
    perform switchyard._refuse('22023', 'start_at_range', 'start_at', start_at::text, format(
      'start_flow_at(%s): start_at %s is invalid: use a time at most 365 days from now',
      switchyard._clip(flow_or_alias), coalesce(start_at::text, 'null')),
      context => jsonb_build_object('max', (switchyard.clock_now() + interval '365 days')::text));
  end if;
  return switchyard.start_flow(flow_or_alias, input, run_id, owner, start_at);
end
$$;
