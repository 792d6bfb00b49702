-- Run priority (issue 23, docs/ARCHITECTURE.md §5.14): a column with a constant default, so no
-- table rewrite; the lock is held only for the catalog change.
alter table switchyard.runs
  add column priority smallint not null default 0 check (priority between -10 and 10);

alter table switchyard.queues add column priority_used_at timestamptz;
