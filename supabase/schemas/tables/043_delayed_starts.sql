-- Delayed starts (start_flow_at, docs/design/waits.md) not begun yet: the run exists,
-- its steps start when switchyard.expire_waits finds it due, and the row goes.
create table switchyard.delayed_starts (
  run_id uuid primary key references switchyard.runs on delete cascade,
  start_at timestamptz not null
);

create index delayed_starts_due on switchyard.delayed_starts (start_at);
