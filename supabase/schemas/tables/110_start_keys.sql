-- Start keys (docs/design/flow-control.md#start-keys): the key a start_flow with `key` gave its
-- run, one
-- row per (name started, key). The row is written in the starting transaction, so a rolled
-- back start leaves none, and its primary key serializes concurrent starts with one key. No
-- foreign key to the run: a dedupe key outlives a pruned run until its TTL (expires_at, set
-- by prune when it deletes the run); switchyard.prune deletes the keys that expired.
create table switchyard.start_keys (
  started_as text not null,                -- the alias or slug the caller used: the key's scope
  key text not null check (length(key) between 1 and 200),
  mode text not null check (mode in ('singleton', 'dedupe', 'debounce')),
  run_id uuid not null,                    -- the run the key names
  owner uuid,                              -- the run's owner: another owner's start is refused
  ttl int check (ttl between 1 and 31536000),          -- dedupe: seconds after the run ends
  delay int check (delay between 1 and 31536000),      -- debounce: seconds after the last start
  max_delay int check (max_delay between 1 and 31536000), -- debounce: at most after the first
  first_at timestamptz not null default switchyard.clock_now(),         -- when this run's first start came
  expires_at timestamptz,                  -- a pruned dedupe run's end + ttl
  primary key (started_as, key)
);

-- The keys of a run, for prune.
create index start_keys_run on switchyard.start_keys (run_id);

-- The keys of pruned dedupe runs by expiry: what prune deletes once due.
create index start_keys_expires on switchyard.start_keys (expires_at) where expires_at is not null;
