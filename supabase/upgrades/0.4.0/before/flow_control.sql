-- Flow control in the claim (issue 23, docs/ARCHITECTURE.md §5.12): rate limits shared by
-- name, the steps' rate limit and keyed concurrency, the concurrency slot of a started task.
create table switchyard.rate_limits (
  name text primary key check (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
  rate int not null check (rate between 1 and 1000000),
  per_seconds int not null check (per_seconds between 1 and 86400),
  burst int not null check (burst between 1 and 1000000),
  tokens double precision not null,        -- tokens at refilled_at
  refilled_at timestamptz not null default now(),  -- may be ahead: a RetryAfter's drain
  updated_at timestamptz not null default now()
);

alter table switchyard.steps
  add column rate_limit text,
  add column rate_cost int not null default 1,
  add column concurrency_path text[],
  add column concurrency_input text not null default 'run'
    check (concurrency_input in ('run', 'step')),
  add column concurrency_limit int;

create index steps_flow_control on switchyard.steps (queue_name)
  where rate_limit is not null or concurrency_limit is not null;

alter table switchyard.step_tasks add column concurrency_key text;

create index step_tasks_concurrency on switchyard.step_tasks (concurrency_key)
  where status = 'started' and concurrency_key is not null;
