-- Composite types the SQL core returns.

-- A row of the claim path's answer (docs/design/claim.md#start_tasks): one per message of a batch.
create type switchyard.task_claim as (
  disposition text,        -- claimed | duplicate | stale | unsupported
  message_id bigint,
  queue_name text,
  flow_slug text,          -- null when the message has no task
  step_slug text,
  run_id uuid,
  attempt int,
  timeout int,
  input jsonb,             -- the outputs of the dependencies; null for a root step, whose
                           -- handler input is the flow input
  flow_input jsonb,        -- the run's input, on the first claimed row of each run in the
                           -- batch only (a large input travels once per batch, not per row)
  task_index int,          -- a map element's index, else 0
  carried_ms int           -- of the step timeout, the milliseconds this attempt already ran on
                           -- instances that handed it back
                           -- (docs/design/worker.md#worker-states-and-parts)
);

-- What one call of switchyard.prune removed (docs/design/versions.md, "Retention").
create type switchyard.prune_result as (
  runs bigint,              -- runs deleted
  step_states bigint,       -- their step states
  step_tasks bigint,        -- their tasks
  archive_rows bigint,      -- PGMQ archive rows of their messages (pgmq.a_<queue>)
  queue_messages bigint,    -- their stale messages still on a queue, deleted
  held_runs bigint,         -- old enough, but locked by someone or a message still held: later
  wake_requests bigint,     -- keep-alive wake records older than the cutoff
  workers bigint            -- rows of workers stopped or silent since before the cutoff
);
