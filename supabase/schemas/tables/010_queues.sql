-- The queue catalog (docs/design/overview.md#queue-ownership): every physical PGMQ queue the kit
-- uses.
create table switchyard.queues (
  queue_name text primary key
    check (switchyard.queue_name_problem(queue_name, false) is null),
  pgmq_name text not null,                 -- exact spelling in pgmq.meta
  ownership text not null check (ownership in ('private', 'shared')),
  owner_flow text,                         -- the flow that owns a private queue
  created_at timestamptz not null default switchyard.clock_now(),
  adopted_at timestamptz,                  -- set when an existing PGMQ queue was adopted
  lost_checked_at timestamptz,             -- the stall sweep's last look for lost messages
  -- When a run of priority other than 0 first had a step on this queue (start_flow): from then
  -- on the queue is read in priority order (read_tasks,
  -- docs/design/flow-control.md#priority-and-keys-in-turn).
  priority_used_at timestamptz,
  check ((ownership = 'private') = (owner_flow is not null)),
  check (ownership = 'private' or position('__' in queue_name) = 0)
);
