-- Open batches (docs/design/batching.md): events of a flow with the `batch` option collect per
-- (name started, batch key) until the batch reaches its maxSize (closed in the transaction of
-- the event that fills it) or its timeout passed since its first event (closed by the tick,
-- close_batches). Closing starts the batch's run with the list of its events and deletes the
-- batch, so only open batches are here. One open batch per (started_as, batch_key): writers
-- serialize on its row; the tick skips a batch a writer holds.
create table switchyard.batches (
  batch_id bigint generated always as identity primary key,
  started_as text not null,                -- the alias (or flow slug) the events name
  batch_key text not null check (length(batch_key) between 1 and 200),
  run_id uuid not null unique,             -- the run the batch becomes, chosen when it opens
  max_size int not null check (max_size between 1 and 10000), -- the flow's, when it opened
  timeout int not null check (timeout between 1 and 86400),   -- seconds
  size int not null default 0,             -- events in it
  bytes bigint not null default 2,         -- the JSON text of the list its run input will be
  opened_at timestamptz not null default switchyard.clock_now(),
  close_at timestamptz not null,           -- opened_at + timeout: the tick closes it then
  last_error text,                         -- the last close that failed (the tick retries)
  constraint batches_open_key unique (started_as, batch_key)
);

create index batches_close_at on switchyard.batches (close_at);

-- The events of an open batch, numbered in the order they joined it (under the batch's lock).
create table switchyard.batch_events (
  batch_id bigint not null references switchyard.batches on delete cascade,
  seq int not null,
  input jsonb not null,
  added_at timestamptz not null default switchyard.clock_now(),
  primary key (batch_id, seq)
);
