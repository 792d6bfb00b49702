-- Refusals (issue 37, docs/ARCHITECTURE.md §9.1), as supabase/schemas/tables/55_refusals.sql
-- creates the table.
create table switchyard.refusals (
  function_name text not null check (function_name ~ '^[a-z][a-z0-9_-]*$'),
  refusal text not null
    check (refusal in ('function_paused', 'function_disabled', 'coverage', 'worker_config',
                       'start_failed', 'unsupported_work')),
  message text not null,                   -- the latest, cut at 2000 characters
  first_at timestamptz not null default now(),
  last_at timestamptz not null default now(),
  count bigint not null default 1 check (count >= 1),
  primary key (function_name, refusal)
);
