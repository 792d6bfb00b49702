-- The visibility a worker's read gives the messages it reads (docs/design/claim.md#read): its
-- claim window plus the longest task timeout of the steps on the queue plus the claim margin,
-- so the claim that follows finds every message hidden long enough and writes none of them
-- again (_keep_hidden). At most read_visibility_cap_seconds() (300) unless the window itself is
-- longer: a worker that dies between its read and its claim leaves the batch hidden that long
-- (its tasks are still queued, so stall recovery does not see them), and a task with a longer
-- timeout is hidden further by its claim. A queue with no step: the window alone. The timeouts
-- are read on every call (one probe of steps_queue per read), so a timeout changed live counts
-- from the next read.
create or replace function switchyard.read_visibility_seconds(queue_name text, claim_window int)
returns int
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
  longest int;
begin
  if claim_window is null or claim_window < 1 or claim_window > 3600 then
    perform switchyard._refuse('22023', 'claim_window_range', 'claim_window', claim_window::text,
      format(
      'read_visibility_seconds: claim window %s is invalid: use whole seconds from 1 to 3600',
      coalesce(claim_window::text, 'null')));
  end if;
  select max(coalesce(st.timeout, f.timeout)) into longest
    from switchyard.steps st
    join switchyard.flows f on f.flow_slug = st.flow_slug
   where st.queue_name = read_visibility_seconds.queue_name;
  if longest is null then
    return claim_window;
  end if;
  return greatest(claim_window,
                  least(claim_window + longest + switchyard.claim_margin_seconds(),
                        switchyard.read_visibility_cap_seconds()));
end
$$;
