-- The body of a task's message. Claiming trusts only (queue_name, message_id); the body is for
-- humans and for the read's order (docs/design/flow-control.md#priority-and-keys-in-turn):
-- `task_index` when given (a map
-- task's element, a retried or re-sent task past index 0); `priority` and `ranked_at` (when the
-- message may be read, in epoch seconds, less `priority` times priority_ageing_seconds) for a run
-- of priority other than 0; `concurrency_key` for a step with keyed concurrency. A run of
-- priority 0 on a step without keyed concurrency gets the body of every earlier release.
create or replace function switchyard._task_message(
  run_id uuid, flow_slug text, step_slug text, task_index int, priority int, delay_seconds int,
  concurrency_key text
)
returns jsonb
language sql
stable
-- No SET clause (every name is qualified): PostgreSQL then inlines it into the successor start's
-- query, which calls it once per task, instead of calling a function per task.
as $$
  select jsonb_build_object('run_id', run_id, 'flow_slug', flow_slug, 'step_slug', step_slug)
         || case when task_index is not null then jsonb_build_object('task_index', task_index)
                 else '{}'::jsonb end
         || case when coalesce(priority, 0) <> 0 then jsonb_build_object(
                   'priority', priority,
                   'ranked_at', round((extract(epoch from switchyard.queue_now())
                                       + coalesce(delay_seconds, 0)
                                       - priority * switchyard.limit_value('priority_ageing_seconds')
                                      )::numeric, 6))
                 else '{}'::jsonb end
         || case when concurrency_key is not null
                 then jsonb_build_object('concurrency_key', concurrency_key)
                 else '{}'::jsonb end
$$;
