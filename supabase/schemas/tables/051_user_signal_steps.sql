-- Wait steps a signed-in user may signal in the runs they own, through signal_user_run, by the
-- alias whose versions the run's flow belongs to. Empty: nobody may, until an operator inserts
-- a row (the opt-in of docs/design/client.md).
create table switchyard.user_signal_steps (
  alias text not null,
  step_slug text not null,
  added_at timestamptz not null default switchyard.clock_now(),
  -- What a user's payload must be, in a subset of JSON Schema (_payload_problem); null: any JSON.
  -- The flow's signalPayload<T>() is a TypeScript type only, which a browser never meets.
  payload_schema jsonb,
  primary key (alias, step_slug)
);
