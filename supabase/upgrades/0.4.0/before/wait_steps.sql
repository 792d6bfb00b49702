-- Wait, sleep and child-flow steps (issue 22, docs/ARCHITECTURE.md §5.11): a step with no
-- handler and no queue (a child-flow step: the alias it starts); its timeout and what the timeout does; a waiting step's deadline; the signals, kept
-- from the moment they arrive; the three run events of a wait.
alter table switchyard.steps drop constraint steps_step_type_check;

alter table switchyard.steps add constraint steps_step_type_check
  check (step_type in ('single', 'map', 'wait', 'sleep', 'flow'));

alter table switchyard.steps alter column queue_name drop not null;

alter table switchyard.steps add column wait_timeout int;

alter table switchyard.steps add column on_timeout text not null default 'fail'
  check (on_timeout in ('fail', 'skip'));

alter table switchyard.steps add constraint steps_queue_by_type
  check ((queue_name is null) = (step_type in ('wait', 'sleep', 'flow')));

alter table switchyard.steps add column child_alias text;

alter table switchyard.step_states add column wait_deadline timestamptz;

create index step_states_wait_deadline on switchyard.step_states (wait_deadline)
  where status = 'started' and wait_deadline is not null;

create table switchyard.run_signals (
  run_id uuid not null,
  step_slug text not null,
  signal_key text,
  payload jsonb not null,
  signalled_at timestamptz not null default now(),
  delivered_at timestamptz,
  primary key (run_id, step_slug),
  foreign key (run_id, step_slug) references switchyard.step_states on delete cascade
);

alter table switchyard.run_events drop constraint run_events_event_check;

alter table switchyard.run_events add constraint run_events_event_check
  check (event in ('started', 'completed', 'failed', 'skipped', 'cancelled', 'retried',
                   'waiting', 'signalled', 'timed out'));

-- Delayed starts (start_flow_at) not begun yet: expire_waits begins them when due.
create table switchyard.delayed_starts (
  run_id uuid primary key references switchyard.runs on delete cascade,
  start_at timestamptz not null
);

create index delayed_starts_due on switchyard.delayed_starts (start_at);

-- Child runs (a 'flow' step): the run a parent's step started, found by the parent's step.
create table switchyard.child_runs (
  run_id uuid primary key references switchyard.runs on delete cascade,
  parent_run_id uuid not null,
  parent_step text not null,
  unique (parent_run_id, parent_step),
  foreign key (parent_run_id, parent_step) references switchyard.step_states on delete cascade
);
