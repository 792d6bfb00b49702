-- Refusals (docs/design/worker.md#refusals-are-seen-where-operators-look): why a queue function's
-- worker did not start, or stopped
-- taking work, where an operator looks. The answer of a refused start goes to its caller — on a
-- hosted project the keep-alive's pg_net, which nobody reads — so the worker records it here too
-- (switchyard.record_refusal), best effort. Bounded: one row per function and kind, with its
-- first and last time, how often, and the latest message as the function logged it.
create table switchyard.refusals (
  function_name text not null check (function_name ~ '^[a-z][a-z0-9_-]*$'),
  refusal text not null
    check (refusal in ('function_paused', 'function_disabled', 'coverage', 'worker_config',
                       'start_failed', 'unsupported_work')),
  message text not null,                   -- the latest, cut at 2000 characters
  first_at timestamptz not null default switchyard.clock_now(),
  last_at timestamptz not null default switchyard.clock_now(),
  count bigint not null default 1 check (count >= 1),
  primary key (function_name, refusal)
);
