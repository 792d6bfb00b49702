-- Why an alias may not move from its current target to the target of a declared version list
-- now, or null when it may (docs/design/versions.md, Declared aliases). Two things hold a move
-- back, both to be reported, never overridden:
--   - the current target is not in the list (the registry retired it) and still has started
--     runs: only a registry that lists it can finish them, so the alias stays until it does
--     (list it again until drained, or cancel those runs);
--   - a live worker polls a queue a step of the new target is routed to and its registry lacks
--     that step: handed such a task it would refuse the batch and pause its function
-- (docs/design/claim.md#the-unsupported-batch).
--     The first worker whose registry has the new target moves the alias when it starts.
-- A worker that is not live (stopped, deprecated by a fence, or silent past its window) is not
-- hurt: a later start of an older registry is refused by coverage, which pauses nothing.
create or replace function switchyard._alias_move_blocker(
  current_target text, versions text[]
)
returns text
language plpgsql
stable
set search_path = ''
as $$
declare
  target text := versions[cardinality(versions)];
  open_runs bigint;
  hurt text;
begin
  if current_target is null or current_target = target then
    return null;
  end if;
  if not (current_target = any (versions)) then
    select count(*) into open_runs from switchyard.runs r
     where r.flow_slug = current_target and r.status = 'started';
    if open_runs > 0 then
      return format('%s, which the registry no longer lists, has %s started run(s)',
                    current_target, open_runs);
    end if;
  end if;
  select string_agg(distinct format('%s (queue %s)', w.function_name, w.queue_name), ', '
                    order by format('%s (queue %s)', w.function_name, w.queue_name))
    into hurt
    from switchyard.workers w
    join switchyard.steps st on st.flow_slug = target and st.queue_name = w.queue_name
   where switchyard._worker_live(w.stopped_at, w.deprecated_at, w.last_heartbeat_at,
                                 w.heartbeat_window_seconds)
     and not exists (select 1 from switchyard.pair_sets ps
                      where ps.pair_set = w.pair_set and ps.pair = target || '/' || st.step_slug);
  if hurt is not null then
    return format('live workers lack %s: %s', target, hurt);
  end if;
  return null;
end
$$;
