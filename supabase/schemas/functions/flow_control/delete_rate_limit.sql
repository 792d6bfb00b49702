-- Removes a rate limit (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): steps
-- naming it start unlimited from the
-- next claim. Returns whether it existed.
create or replace function switchyard.delete_rate_limit(name text)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
begin
  delete from switchyard.rate_limits l where l.name = delete_rate_limit.name;
  return found;
end
$$;
