-- Classifies one claimed batch (no side effects): the heart of the claim
-- (docs/design/claim.md#start_tasks). Identity is (queue_name, message_id) only: message bodies are
-- never trusted. `pair_set`
-- is a key from switchyard.pair_set(); each message costs index lookups only, so the cost does
-- not grow with the size of the registry. A map task's input is its element; 'skipped' tasks are
-- stale.
--   eligible    supported pair, task queued, run started and not paused
--   paused      supported pair, task queued, run paused (docs/design/rerun.md): hidden again
--   duplicate   supported pair, task started, run started (left to stall recovery)
--   stale       supported pair, task terminal (completed, failed, skipped) or run ended (archived)
--   unsupported no task for the message on this queue, or an unsupported pair
-- PL/pgSQL rather than SQL so that the plan is cached per session.
create or replace function switchyard.classify_batch(
  queue text, message_ids bigint[], pair_set text
)
returns table (message_id bigint, class text, flow_slug text, step_slug text)
language plpgsql
stable
set search_path = ''
as $$
begin
  return query
  select b.id,
         case
           when t.run_id is null or not t.supported then 'unsupported'
           when t.run_status not in ('started', 'paused')
                or t.status in ('completed', 'failed', 'skipped') then 'stale'
           when t.status = 'started' then 'duplicate'
           when t.run_status = 'paused' then 'paused'
           else 'eligible'
         end,
         t.flow_slug,
         t.step_slug
    from (select distinct u.id from unnest(message_ids) as u(id)) b
    left join lateral (
      select x.run_id, x.flow_slug, x.step_slug, x.status,
             -- The run's row, read once: a paused run's status reads 'paused' here.
             (select case when r.paused_at is not null and r.status = 'started' then 'paused'
                     else r.status end
                from switchyard.runs r where r.run_id = x.run_id) as run_status,
             exists (select 1 from switchyard.pair_sets s
                      where s.pair_set = classify_batch.pair_set
                        and s.pair = x.flow_slug || '/' || x.step_slug) as supported
        from switchyard.step_tasks x
       where x.queue_name = queue and x.message_id = b.id
       limit 1  -- a probe per message, never a scan of the queue (see start_tasks)
    ) t on true
   order by b.id;
end
$$;
