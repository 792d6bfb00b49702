-- Signals from a browser (issue 22, docs/ARCHITECTURE.md §14): the wait steps, by alias, that a
-- signed-in user may signal in their own runs through signal_user_run.
create table switchyard.user_signal_steps (
  alias text not null,
  step_slug text not null,
  added_at timestamptz not null default now(),
  payload_schema jsonb,
  primary key (alias, step_slug)
);
