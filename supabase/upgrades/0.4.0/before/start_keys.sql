-- Start keys (issue 23, docs/ARCHITECTURE.md §5.13): the table, and start_flow's new signature
-- (key, mode, ttl, delay, max_delay, and start_at and deadline_at as arguments instead of
-- transaction-local settings), every new argument defaulted, so the call of released
-- runtimes, start_flow(flow_or_alias, input, run_id, owner), resolves to it. The old
-- signature goes first: with both, that call would be ambiguous. The new definition follows
-- in this migration, in the same transaction, so no caller sees start_flow missing.
create table switchyard.start_keys (
  started_as text not null,
  key text not null check (length(key) between 1 and 200),
  mode text not null check (mode in ('singleton', 'dedupe', 'debounce')),
  run_id uuid not null,
  owner uuid,
  ttl int check (ttl between 1 and 31536000),
  delay int check (delay between 1 and 31536000),
  max_delay int check (max_delay between 1 and 31536000),
  first_at timestamptz not null default now(),
  expires_at timestamptz,
  primary key (started_as, key)
);

create index start_keys_run on switchyard.start_keys (run_id);

create index start_keys_expires on switchyard.start_keys (expires_at) where expires_at is not null;

drop function switchyard.start_flow(text, jsonb, uuid, uuid);
