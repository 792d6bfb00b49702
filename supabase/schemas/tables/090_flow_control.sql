-- Rate limits shared by name (docs/design/flow-control.md#rate-limits-and-keyed-concurrency): a
-- token bucket of burst tokens,
-- refilled at rate tokens per per_seconds. Steps of any flow, version or queue name a limit;
-- start_tasks takes a step's cost from it for each task it starts, and a task it cannot pay
-- for waits, visible again when the tokens will be there. The operator changes a row with
-- switchyard.set_rate_limit, live.
create table switchyard.rate_limits (
  name text primary key check (name ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
  rate int not null check (rate between 1 and 1000000),
  per_seconds int not null check (per_seconds between 1 and 86400),
  burst int not null check (burst between 1 and 1000000),
  tokens double precision not null,        -- tokens at refilled_at
  refilled_at timestamptz not null default switchyard.clock_now(),  -- may be ahead: a RetryAfter's drain, at
                                                   -- most per_seconds (set_rate_limit lifts it)
  updated_at timestamptz not null default switchyard.clock_now()
);
