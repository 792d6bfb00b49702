-- Batching (issue 43, docs/design/batching.md), as supabase/schemas/tables/135_batches.sql and
-- 130_row_triggers.sql declare them: the open batches and their events, and a row trigger's
-- batch_by. start_flow gains batch_key: the previous signature goes first (with both, every
-- call that leaves batch_key out would be ambiguous); the new definition follows in this
-- migration, in the same transaction, so no caller sees start_flow missing.
create table switchyard.batches (
  batch_id bigint generated always as identity primary key,
  started_as text not null,
  batch_key text not null check (length(batch_key) between 1 and 200),
  run_id uuid not null unique,
  max_size int not null check (max_size between 1 and 10000),
  timeout int not null check (timeout between 1 and 86400),
  size int not null default 0,
  bytes bigint not null default 2,
  opened_at timestamptz not null default now(), -- clock_now(): after/021_batches_clock.sql
  close_at timestamptz not null,
  last_error text,
  constraint batches_open_key unique (started_as, batch_key)
);

create index batches_close_at on switchyard.batches (close_at);

create table switchyard.batch_events (
  batch_id bigint not null references switchyard.batches on delete cascade,
  seq int not null,
  input jsonb not null,
  added_at timestamptz not null default now(), -- clock_now(): after/021_batches_clock.sql
  primary key (batch_id, seq)
);

alter table switchyard.row_triggers add column batch_by text;

drop function switchyard.start_flow(text, jsonb, uuid, uuid, timestamptz, timestamptz, text,
  text, int, int, int, text, int);
