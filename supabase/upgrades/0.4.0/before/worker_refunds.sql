-- Bounded refunds (issue 36, docs/ARCHITECTURE.md §9): a task counts the attempts handed back
-- at an instance's end, and the time its current attempt ran on earlier instances, as
-- supabase/schemas/tables/40_runs.sql has them. Constant defaults: no table rewrite. (Named to
-- sort after telemetry.sql, whose last_failed_at comes before these columns.)
alter table switchyard.step_tasks
  add column refunds int not null default 0,
  add column carried_ms int not null default 0,
  add column carried_attempt int;

-- The claim tells the worker how much of the step timeout earlier instances used.
alter type switchyard.task_claim add attribute carried_ms int;

-- release_tasks takes what the worker hands back (a new argument, defaulted for 0.3.0 runtimes).
drop function switchyard.release_tasks(uuid);
