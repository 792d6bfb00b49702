-- The most attempts of one task handed back at an instance's end without being counted
-- (release_tasks, docs/design/worker.md#worker-states-and-parts): enough for a checkpointed handler
-- to cross a day-long
-- step timeout on 150 s instances (about 600 hand-overs); past it a hand-over counts as a
-- failed attempt, so maxAttempts still ends a task that is handed back forever.
create or replace function switchyard.max_task_refunds()
returns int
language sql
immutable
set search_path = ''
as $$
  select 1000
$$;
